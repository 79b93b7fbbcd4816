#!/bin/bash
# Prepared in session 28 for session 29 (NOT RUN), ~1.5 min: the pool's 1 x 128 round trip with
# the defaults (spin 0) misses the target (session 28: 377 / 675 us p50 / p99 against
# 300 / 500; spin 300 pinned 262 / 315). Does a small busy-poll default, unpinned, meet it?
# Spins 0, 50, 100, 300 without pinning; also CPU time of the idle pool is worth a look (ps).
# Pack (dev box, after ops/install-deps.sh and ops/fetch-model.sh; build-next/bin0 at main):
#   cmake --build build-next/bin0/build --target ember-broker ember-worker bench_pool ember
#   P=.gpucarry/pool; mkdir -p $P/bin $P/lib; cp the four binaries (broker/, worker/, bench/,
#   client/) to $P/bin and strip them; copy to $P/lib libember.so.0 (client/) and, from
#   /lib/x86_64-linux-gnu, libbsd libcom_err libgssapi_krb5 libhiredis libjansson libk5crypto
#   libkeyutils libkrb5 libkrb5support libmd libnorm libpgm-5.3 libsodium libzmq libgfortran
#   libquadmath and openblas-pthread/libopenblas.so.0 (what ldd names); cp
#   models/all-MiniLM-L6-v2/tokenizer.json $P/;
#   tar cf - -C .gpucarry pool | xz -T1 --lzma2=preset=6,dict=192MiB > .gpupack/pool.tar.xz (12 MB)
# Device: carry [".gpupack/pool.tar.xz"]; mkdir -p .gpucarry && tar xJf .gpupack/pool.tar.xz -C .gpucarry && bash docs/results/2026-12-03-h200-session28/poolspin.sh
CONFIGS="0 50 100 300" timeout 400 bash bench/gpu/pool_latency.sh .gpucarry/pool $OUT/poolspin
echo "== rc $?"
