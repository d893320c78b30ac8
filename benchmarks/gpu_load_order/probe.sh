#!/bin/bash
# Which start of the local provider crashes on a CUDA build of llama-cpp-python (issue 30, item 8).
#   bash benchmarks/gpu_load_order/probe.sh MODEL.gguf      (OUT=folder for probe.log; default /tmp/gpu_out)
# Needs a CUDA build importable as llama_cpp and judgesdk beside it on PYTHONPATH=/tmp/site (gpu-check's run.sh
# assembles both; benchmarks/README.md, "The local provider on a CUDA build", has the commands), and gcc for
# segv_bt.c, an LD_PRELOAD that writes a crash's native stack. Each (prelude, body) runs in a fresh process:
# preludes.py says what runs first, body.py what is loaded. Then `judgesdk score` under each prelude that held.
P=$(cd "$(dirname "$0")" && pwd); M=$1; OUT=${OUT:-/tmp/gpu_out}; mkdir -p $OUT; L=$OUT/probe.log; T0=$SECONDS
gcc -shared -fPIC -O0 -g -o /tmp/segv_bt.so $P/segv_bt.c && echo "segv_bt built" >>$L || echo "segv_bt FAILED" >>$L
{ echo "ulimit -s: $(ulimit -s)"; ls /tmp/site/llama_cpp/lib/; } >>$L
export PYTHONPATH=$P:/tmp/site PYTHONUNBUFFERED=1
run() {  # prelude body [env...]
  local pre=$1 body=$2; shift 2
  local f=/tmp/fault-$pre-$body bt=/tmp/bt-$pre-$body o=/tmp/out-$pre-$body t=$SECONDS; rm -f $f $bt
  env "$@" PROBE_PRELUDE=$pre FAULT_FILE=$f SEGV_BT_FILE=$bt LD_PRELOAD=/tmp/segv_bt.so timeout 25 python3 $P/body.py $body $M >$o 2>$o.err
  local rc=$?
  echo "CASE prelude=$pre body=$body env=[$*] rc=$rc out=$(tail -1 $o) ($((SECONDS-t))s)" | tee -a $L
  if [ $rc != 0 ]; then
    { echo "--- stderr tail"; tail -4 $o.err; echo "--- python"; head -16 $f 2>/dev/null; echo "--- native"; grep -v "^[0-9a-f]*-[0-9a-f]* " $bt 2>/dev/null | head -50; } >>$L
    if [ -z "$MAPS_DONE" ] && [ -s $bt ]; then grep -E "^[0-9a-f]+-[0-9a-f]+ .*(llama|ggml|cuda|cublas|gomp|openblas)" $bt >>$L; MAPS_DONE=1; fi
  fi
}
cli() {  # prelude: judgesdk score on 12 items through a config, as gpu-check's CLI step
  local pre=$1 t=$SECONDS d=/tmp/cli-$1; rm -rf $d; mkdir -p $d
  python3 -c "import json
for i in range(12): print(json.dumps({'id': f'i{i}', 'source': 'The council voted on Monday to turn the old rail yard into a park with %d new trees.' % (10 * i), 'output': 'The council will build a park with %d trees.' % (10 * i + i % 3)}))" >$d/items.jsonl
  printf 'method = "geval"\n\n[[providers]]\nkind = "local"\n[providers.options]\nmodel_path = "%s"\nn_gpu_layers = -1\n' "$M" >$d/judge.toml
  PROBE_PRELUDE=$pre SEGV_BT_FILE=$d/bt LD_PRELOAD=/tmp/segv_bt.so timeout 60 python3 -m judgesdk.cli score $d/items.jsonl --config $d/judge.toml -o $d/res.jsonl --criterion coherence --definition "The summary is well structured." --quiet --no-cache >$d/log 2>&1
  local rc=$?
  echo "CLI prelude=$pre rc=$rc rows=$(grep -c '"probs"' $d/res.jsonl 2>/dev/null) ($((SECONDS-t))s) $(tail -c 300 $d/log | tr '\n' ' ')" | tee -a $L
}
run none config
run none pure_thread
run none pure_main
run none pure_pool
run numpy_first pure_thread
run none config CUDA_VISIBLE_DEVICES= NGL=0
run llama_first config
run checkpy config
run debuglog config
run sysinfo config
run numpy_first config
run bigstack config
run bigstack pure_thread
echo "cases done at $((SECONDS-T0))s" >>$L
for pre in checkpy llama_first sysinfo debuglog numpy_first bigstack; do
  [ $((SECONDS-T0)) -lt 170 ] || break
  grep -q "CASE prelude=$pre body=config env=\[\] rc=0" $L && cli $pre
done
cli none
echo "probe done at $((SECONDS-T0))s" >>$L
