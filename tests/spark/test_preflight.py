"""A Spark source's local input is checked when the job is submitted, as a file source's is."""

import re

import pytest

from jet import Pipeline, Sinks, Sources


def submitted(source):
    pipeline = Pipeline.create()
    pipeline.read_from(source).write_to(Sinks.list())
    pipeline.preflight()


@pytest.mark.parametrize("path", ["{dir}/nowhere.parquet", "file://{dir}/nowhere.parquet", "{dir}/part-*.parquet"])
def test_a_missing_local_input_is_refused(tmp_path, path):
    path = path.format(dir=tmp_path)
    with pytest.raises(FileNotFoundError, match=re.escape(f"Sources.spark: no file or directory matches '{path}'")):
        submitted(Sources.spark("parquet", path))


@pytest.mark.parametrize("path", ["{dir}/in.parquet", "file://{dir}/in.parquet", "{dir}/in.*"])
def test_an_existing_local_input_passes(tmp_path, path):
    (tmp_path / "in.parquet").mkdir()
    submitted(Sources.spark("parquet", path.format(dir=tmp_path)))


@pytest.mark.parametrize("format, path", [
    ("parquet", "s3a://bucket/nowhere/"),     # remote: Spark checks it
    ("delta", "/no/such/table"),              # not a file format Jet knows
    ("parquet", "/no/such/{a,b}.parquet"),    # a Hadoop glob Python cannot expand
    ("jdbc", None),
])
def test_what_only_spark_can_check_is_left_to_spark(format, path):
    submitted(Sources.spark(format, path))
