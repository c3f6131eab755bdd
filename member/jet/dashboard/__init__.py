"""The web dashboard every member serves on its HTTP port (docs/dashboard.md).

- :mod:`jet.dashboard.api`: the JSON API under ``/api/`` (cluster, jobs, one job with its DAG and
  figures, the job actions);
- :mod:`jet.dashboard.job_view`: a job's DAG and figures as the pages draw them;
- :mod:`jet.dashboard.load`: this process's CPU time and memory;
- :mod:`jet.dashboard.sessions`: the session cookie, the cross-site check and the login form;
- :mod:`jet.dashboard.routes`: which request goes where (used by :mod:`jet.cluster.member_http`);
- ``static/``: the one-page app (plain JavaScript, the DAG in inline SVG, no build step).
"""
