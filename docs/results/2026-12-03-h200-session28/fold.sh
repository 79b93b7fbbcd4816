#!/bin/bash
# Session 28, ~3 min: the folded LayerNorm at every bucket (F = main da9d903 with fold_max=16384)
# against the default (N: folded up to 256 tokens). Session 17 measured the fold slower at the
# ragged buckets (2.66 against 2.26 ms); since then the GEMMs changed (ping-pong fold tiles,
# three-group ping-pong, staged fold operands), and today's gemms bench puts a MiniLM layer's
# folded GEMMs at 152 us against 158 for the plain ones with their LayerNorm kernels (16384
# tokens). Each label tunes its own cache (the folded GEMMs' shapes are new at those buckets).
# Pack: .gpupack/s28.tar.xz (binN); run: bash .gpucarry/fold.sh
. bench/gpu/variant_steps.sh
variant_setup fold
AB_ITERS=200 bash bench/gpu/engine_ab.sh $R/ab.txt /tmp/m b1_128,512,1024,4096,ragged 3 N=$C/binN \
  F=$C/binN,fold_max=16384 > $R/ab_summary.txt 2>&1
ab_summary $R/ab_summary.txt
variant_finish fold
