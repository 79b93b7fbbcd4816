#!/bin/bash
# Session 41, run 2: what run 1 (s41a.sh) left: its kernel tests ran out of time after linear and
# linear_ln, so proj_ln (with the new PDL check), pool and attention on RP; then what the pruned
# last layer saves (s38q.sh's A/B: prune=off against prune=auto on the CLS twins, ragged and
# 16384 tokens, 2 rounds) in the time left.
# Pack and device command: as s41a.sh, with s41b.sh.
. bench/gpu/variant_steps.sh
variant_setup s41b
left() { local l=$((575 - SECONDS - $1)); [ $l -gt 10 ] && echo $l || echo 10; }
kernel_tests RP "$(left 180)" proj_ln pool attention
grep -E "proj_ln .*(worst|skipped|PDL)|pool rows|attention: kernel|CHECK failed" "$R/kernels_RP.log" | head -24
echo "== at $SECONDS s"
[ -d /tmp/m/minilm-cls ] || python3 bench/gpu/make_random_models.py /tmp/m >/dev/null 2>&1
AB_MODELS="minilm-cls bert-base-cls" AB_ITERS=300 timeout "$(left 0)" bash bench/gpu/engine_ab.sh \
    "$R/ab.txt" /tmp/m ragged,16384 2 off="$C/binRP,prune=off" on="$C/binRP" > /dev/null 2>&1
echo "== ab at $SECONDS s"
ab_table "$R/ab.txt" | tee "$R/ab_table.md"
variant_finish s41b
