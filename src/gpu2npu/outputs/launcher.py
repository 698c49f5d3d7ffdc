"""run_distributed_npu.sh: the multi-NPU launcher written next to a `distributed` migration."""
from __future__ import annotations

import shlex

LAUNCHER_NAME = "run_distributed_npu.sh"

TEMPLATE = """\
#!/usr/bin/env bash
# Starts {main} on several Ascend NPUs, one process per NPU (written by gpu2npu distributed).
#
#   NPUS=0,1,2,3 bash {name} [arguments of {main}...]
#
# NPUS        comma-separated NPU ids to use (default: 0,1,2,3,4,5,6,7); only these are visible
#             to the processes (ASCEND_RT_VISIBLE_DEVICES), which number them 0, 1, ...
# PYTHON      interpreter (default: python3)
# MASTER_ADDR / MASTER_PORT   rendezvous address (default: 127.0.0.1:29688)
# Process i gets RANK_ID=RANK=LOCAL_RANK=DEVICE_ID=i and RANK_SIZE=WORLD_SIZE=<number of NPUs>
# (both the Ascend and the torchrun names, so scripts reading either work); its output goes to
# output_npu_<NPU id>.log in the current folder.  Every process receives the batch size you
# pass: the global batch is RANK_SIZE times larger than on one card.
#
# The same with torchrun (it sets RANK, WORLD_SIZE and LOCAL_RANK, which the script also reads):
#   ASCEND_RT_VISIBLE_DEVICES=0,1,2,3 torchrun --nproc_per_node=4 {main} [arguments...]
set -u
here="$(cd "$(dirname "${{BASH_SOURCE[0]}}")" && pwd)"
export MASTER_ADDR="${{MASTER_ADDR:-127.0.0.1}}"
export MASTER_PORT="${{MASTER_PORT:-29688}}"
export HCCL_WHITELIST_DISABLE=1
export ASCEND_RT_VISIBLE_DEVICES="${{NPUS:-0,1,2,3,4,5,6,7}}"
IFS=',' read -r -a devices <<< "$ASCEND_RT_VISIBLE_DEVICES"
export RANK_SIZE="${{#devices[@]}}" WORLD_SIZE="${{#devices[@]}}"
python="${{PYTHON:-python3}}"

pids=()
for rank in "${{!devices[@]}}"; do
    DEVICE_ID="$rank" RANK_ID="$rank" RANK="$rank" LOCAL_RANK="$rank" \\
        "$python" -u "$here/"{main_quoted} "$@" > "output_npu_${{devices[$rank]}}.log" 2>&1 &
    pids+=("$!")
done
status=0
for pid in "${{pids[@]}}"; do
    wait "$pid" || status=1
done
if [ "$status" -ne 0 ]; then
    echo "run_distributed_npu.sh: a process failed, see output_npu_*.log" >&2
fi
exit "$status"
"""


SPAWNING_TEMPLATE = """\
#!/usr/bin/env bash
# Starts {main} on several Ascend NPUs (written by gpu2npu distributed).
#
# {main} starts one process per device itself (torch.multiprocessing.spawn), so it runs once
# here, seeing only the NPUs listed in NPUS; its processes number them 0, 1, ...  Pass the
# script's own options for multi-process training, e.g. for a pytorch/examples-style script:
#
#   NPUS=0,1,2,3 bash {name} --multiprocessing-distributed --world-size 1 --rank 0 \\
#       --dist-url "tcp://127.0.0.1:29688" [other arguments...]
#
# NPUS        comma-separated NPU ids to use (default: all)
# PYTHON      interpreter (default: python3)
# MASTER_ADDR / MASTER_PORT   rendezvous address for env:// initialisation (default: 127.0.0.1:29688)
# Output goes to output_npu.log in the current folder.
set -u
here="$(cd "$(dirname "${{BASH_SOURCE[0]}}")" && pwd)"
export MASTER_ADDR="${{MASTER_ADDR:-127.0.0.1}}"
export MASTER_PORT="${{MASTER_PORT:-29688}}"
export HCCL_WHITELIST_DISABLE=1
if [ -n "${{NPUS:-}}" ]; then
    export ASCEND_RT_VISIBLE_DEVICES="$NPUS"
    IFS=',' read -r -a devices <<< "$NPUS"
    export RANK_SIZE="${{#devices[@]}}"
fi
"${{PYTHON:-python3}}" -u "$here/"{main_quoted} "$@" > output_npu.log 2>&1
status=$?
if [ "$status" -ne 0 ]; then
    echo "run_distributed_npu.sh: {main} failed, see output_npu.log" >&2
fi
exit "$status"
"""


def launcher_script(main_file: str, main_spawns: bool = False) -> str:
    """The launcher for `main_file`; `main_spawns` when the script starts its own processes."""
    template = SPAWNING_TEMPLATE if main_spawns else TEMPLATE
    return template.format(main=main_file, name=LAUNCHER_NAME, main_quoted=shlex.quote(main_file))
