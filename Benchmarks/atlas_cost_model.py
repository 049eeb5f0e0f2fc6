#!/usr/bin/env python3
"""The arithmetic of Documentation/AtlasCostModel.md, sections 3 and 4:
the bytes the atlas builder reduces per iteration (as implemented: float64
accumulators; LDDMM: 2 + 1 + atlas_cg_iters image sums and one momentum
field), ring-allreduce times, and the predicted time per atlas iteration and
parallel efficiency. Prints Markdown tables.

    python Benchmarks/atlas_cost_model.py [--cg 10]
"""
import argparse
import math

GRIDS = {'2 mm': 99 * 117 * 95, '1 mm': 197 * 233 * 189}
LINKS = {'IB 100 Gb/s': (12.5e9, 2e-6), 'Eth 10 Gb/s': (1.25e9, 50e-6)}
PCIE = 25e9                      # pinned staging, one copy down and one up
# per-subject GPU seconds per atlas iteration (project targets, not measurements)
T_S = {('lddmm', '2 mm'): 0.26, ('lddmm', '1 mm'): 2.07, ('greedy', '2 mm'): 0.013,
       ('greedy', '1 mm'): 0.10}


def reductions(method, voxels, cg):
    """(bytes, number of allreduces) per atlas iteration."""
    if method == 'greedy':
        return 8 * voxels, 1
    n_img = 2 + 1 + cg                  # sum W^T I, sum W^T 1, r0 and one per CG iteration
    return 8 * voxels * n_img + 24 * voxels, n_img + 1


def t_allreduce(nbytes, count, p, link):
    if p == 1:
        return 0.0
    bw, lat = LINKS[link]
    return 2.0 * (p - 1) / p * nbytes / bw + 2.0 * (p - 1) * lat * count + 2.0 * nbytes / PCIE


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--cg', type=int, default=10, help='atlas_cg_iters (LDDMM)')
    a = ap.parse_args()
    print('| method, grid | reduced per iteration | allreduces | link | p = 10 | p = 100 | p = 1,000 |')
    print('| --- | ---: | ---: | --- | ---: | ---: | ---: |')
    for method in ('greedy', 'lddmm'):
        for g, v in GRIDS.items():
            b, c = reductions(method, v, a.cg)
            for link in LINKS:
                ts = ['%.1f ms' % (1e3 * t_allreduce(b, c, p, link)) for p in (10, 100, 1000)]
                print('| %s, %s | %.1f MB | %d | %s | %s |' % (method, g, b / 1e6, c, link, ' | '.join(ts)))
    print()
    for method in ('lddmm', 'greedy'):
        for g, v in GRIDS.items():
            ts_ = T_S[(method, g)]
            b, c = reductions(method, v, a.cg)
            print('**%s, %s** (`t_s` = %g s per subject, %.1f MB in %d allreduces):' % (method, g, ts_, b / 1e6, c))
            print()
            print('| subjects | link | 1 GPU | 10 GPUs | 100 GPUs |')
            print('| --- | --- | --- | --- | --- |')
            for n in (100, 1000):
                for link in LINKS:
                    cells = []
                    t1 = n * ts_
                    for p in (1, 10, 100):
                        t = math.ceil(n / p) * ts_ + t_allreduce(b, c, p, link)
                        cells.append('%.3g s (E %.2f)' % (t, t1 / (p * t)))
                    print('| %d | %s | %s |' % (n, link, ' | '.join(cells)))
            print()


if __name__ == '__main__':
    main()
