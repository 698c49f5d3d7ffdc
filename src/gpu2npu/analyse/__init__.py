"""`gpu2npu analyse`: the incumbent's analysis modes (`pytorch_analyse.sh -m ...`), without a
migrated tree.  run.py drives a mode; third_party.py finds what a library's public APIs reach:
library.py reads each module's shape once (with index.py, what its names mean, and hit_facts.py,
what its hits are found from), call_graph.py joins them into the call graph, asking jedi only
what the source leaves open; dynamic_shape.py writes an instrumented copy whose runs record
tensor shapes (detector.py is the code it ships); findings/affected_apis.py feeds a third_party result
into other runs (`-api`)."""
