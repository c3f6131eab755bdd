"""Distributed edges: items of one edge between members (imports ``links`` below it).

The sender and receiver tasklets at each end (:mod:`.sender`, :mod:`.receiver`), Jet's adaptive
receive window (:mod:`.flow_control`), the chunk frame (:mod:`.chunk_packets`), DONE through one
relay member (:mod:`.done_relay`), frames that come before their execution (:mod:`.early_frames`),
the member's frame router (:mod:`.network`), a member's execution plan with its distributed
edges (:mod:`.distributed_plan`) and their figures (:mod:`.edge_metrics`).
"""
