# docs/results/2026-12-04-h200-session37/layout_check.py (python3 layout_check.py: prints layout ok)
# Checks the row tile's epilogue addressing (kernels/ffn.cu finish) against the TMA's 128-byte
# swizzled layout of the staged x tile, for both widths: every accumulator pair of every thread
# of both groups maps to the byte address TMA wrote its (row, col) at, the two groups' pairs are
# disjoint and cover the tile, and the store loop reads each row's 16-byte chunks in order.
def tma_addr(row, col, R):          # x tile: [cols/64][R][64] slabs, 128B swizzle
    slab, c = col // 64, col % 64
    chunk = (c // 8) ^ (row % 8)
    return slab * R * 128 + row * 128 + chunk * 16 + (c % 8) * 2
def tile_off(lr, col, R):
    return (col // 64) * R * 128 + lr * 128 + (((col % 64) // 8) ^ (lr % 8)) * 16 + (col % 8) * 2
for wide in (False, True):
    R = 64 if wide else 128; cols = 768 if wide else 384
    seen = {}
    for wg in (1, 2):
        xa = (wg - 1) * (6 * R * 128 if wide else 64 * 128)
        col0 = (wg - 1) * 384 if wide else 0
        rowbase = 0 if wide else (wg - 1) * 64
        for warp in range(4):
            for lane in range(32):
                lr0 = 16 * warp + lane // 4; cl = 2 * (lane % 4)
                rs0 = [(xa + (lr0 + 8 * hh) * 128 + cl * 2) | ((lane // 4) << 4) for hh in (0, 1)]
                for half in (0, 1):
                    for g in range(24):
                        for hh in (0, 1):
                            sg = half * 24 + g
                            a = (rs0[hh] ^ ((sg % 8) << 4)) + (sg // 8) * R * 128
                            row = rowbase + lr0 + 8 * hh; col = col0 + half * 192 + 8 * g + cl
                            assert a == tma_addr(row, col, R), (wide, wg, warp, lane, half, g, hh)
                            assert (row, col) not in seen; seen[(row, col)] = wg
        # store loop: 16-byte chunk q of the group's 64 x 48
        for q in range(64 * 48):
            lr, cc = q // 48, q % 48
            a = xa + tile_off(lr, cc * 8, R)
            row = rowbase + lr; col = col0 + cc * 8
            assert a == tma_addr(row, col, R), ('store', wide, wg, q)
    # every even column of every row once (pairs)
    assert len(seen) == R * cols // 2, (wide, len(seen))
print('layout ok')
