"""`gpu2npu analyse`: the incumbent's analysis modes (`pytorch_analyse.sh -m ...`), without a
migrated tree.  run.py drives a mode; third_party.py (with library.py and call_graph.py, jedi)
finds what a library's public APIs reach; dynamic_shape.py writes an instrumented copy whose
runs record tensor shapes (detector.py is the code it ships); affected_apis.py feeds a
third_party result into other runs (`-api`)."""
