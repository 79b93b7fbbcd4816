# docs/results/2026-12-04-h200-session37/ring_sim.py (python3 ring_sim.py: prints ok and the rejected protocol's failures)
# Randomised check of the row tile's ring protocol (kernels/ffn.cu run_proj + producer):
# no deadlock, no stage refilled while a group may still read it, no empty arrival counted
# towards an earlier fill, no parity aliasing on the full barriers.
import random, sys
def run(S, parts, n_chunks, wide, pre_split, rng):
    N = parts * n_chunks
    full_done = [0]*S          # completed fills per stage
    full_pending = {}          # it -> True once issued (lands later)
    emp = [0]*S                # empty arrivals per stage (count 2 a phase)
    reading = [set() for _ in range(S)]  # groups reading the current fill
    # producer program: list of 'load it' / waits
    pre = min(N, S)
    order = [it for it in range(pre) if (not pre_split) or it % parts != 0] + \
            [it for it in range(pre) if pre_split and it % parts == 0] + list(range(pre, N))
    pp = 0
    inflight = []  # loads in flight: it
    # consumer state per group
    cons = []
    for g in range(2):
        cons.append({'c': 0, 'phase': 'wait', 'q': 0, 'held': []})
    def fill_wait_ok(it):
        s, k = it % S, it // S
        if full_done[s] > k + 1: raise Exception('parity alias on full[%d]' % s)
        return full_done[s] == k + 1
    def arrive(g, it):
        s, k = it % S, it // S
        if emp[s] // 2 != k: raise Exception('arrival of group %d for fill %d of stage %d counted in phase %d' % (g, k, s, emp[s]//2))
        emp[s] += 1
        reading[s].discard(g)
    steps = 0
    while True:
        steps += 1
        if steps > 100000: raise Exception('livelock')
        actors = []
        # producer can act?
        if pp < len(order):
            it = order[pp]; s, k = it % S, it // S
            if k == 0 or emp[s] // 2 >= k:
                actors.append('P')
        if inflight: actors.append('L')
        for g in range(2):
            st = cons[g]
            if st['c'] >= n_chunks and st['phase'] == 'wait' and not st['held']:
                continue
            actors.append(g)
        if not actors:
            done = pp == len(order) and all(c['c'] >= n_chunks and not c['held'] for c in cons)
            if done: return
            raise Exception('deadlock: pp=%d/%d cons=%s' % (pp, len(order), cons))
        a = rng.choice(actors)
        if a == 'P':
            it = order[pp]; s = it % S
            if reading[s]: raise Exception('stage %d refilled while read by %s' % (s, reading[s]))
            inflight.append(it); pp += 1
        elif a == 'L':
            it = inflight.pop(rng.randrange(len(inflight)))
            full_done[it % S] += 1
        else:
            g = a; st = cons[g]
            c = st['c']
            if st['phase'] == 'wait':
                if c >= n_chunks:
                    # final release (384): wait<0> then release held
                    for it in st['held']: arrive(g, it)
                    st['held'] = []
                    continue
                it0 = parts * c
                # wait every part in order
                while st['q'] < parts and fill_wait_ok(it0 + st['q']):
                    st['q'] += 1
                if st['q'] < parts: continue
                st['q'] = 0
                for q in range(parts): reading[(it0+q) % S].add(g)
                if wide:
                    for q in range(parts): arrive(g, it0+q)
                else:
                    for it in st['held']: arrive(g, it)   # wait<1>: chunk c-1 done
                    st['held'] = [it0+q for q in range(parts)]
                st['c'] += 1
for trial in range(3000):
    rng = random.Random(trial)
    n = rng.randint(1, 14)
    run(10, 3, n, False, True, rng)   # out 384
    run(9, 5, n, True, True, rng)     # out 768
    run(10, 4, n, False, False, rng)  # the FFN-like ring: 4 parts (consumer pattern of 384 here)
print('ok')
# the rejected protocol: wide with the pipelined release must deadlock somewhere
bad = 0
for trial in range(200):
    rng = random.Random(trial)
    try: run(9, 5, 6, False, True, rng)
    except Exception as e: bad += 1
print('pipelined release with 9 stages of 5: failures in', bad, 'of 200')
