"""samples.py - the GPU benchmarks' raw sample files ("row setting value" lines, in run order),
read by bench/gpu_bench.sh's and bench/gpu_probe.sh's summaries."""
import collections


def load(path):
    """{(row, setting): [values in run order]}; lines that are not three fields or whose value
    is not a number (a skipped row says why in its place) are left out."""
    samples = collections.defaultdict(list)
    for line in open(path):
        parts = line.split()
        if len(parts) == 3:
            try:
                samples[(parts[0], parts[1])].append(float(parts[2]))
            except ValueError:
                pass
    return samples
