"""code_lines.py - the code lines of OBJ that run about once a pair or more, from callgrind
--dump-instr=yes runs of one program at two pair counts (the growth of each instruction's count
per added pair), merged into OFF:LEN ranges (bench/code_lines.sh).
usage: code_lines.py OBJ RATE SMALL.out BIG.out DPAIRS [SMALL BIG DPAIRS ...]"""
import re, sys, collections

def counts(f, obj):
    per = collections.Counter()
    ob_names, cur_ob, addr, after_calls = {}, None, 0, False
    for raw in open(f):
        l = raw.rstrip('\n')
        if not l:
            continue
        c = l[0]
        if c in '0123456789+-*':
            tok = l.split()
            p = tok[0]
            if p == '*':
                pass
            elif p[0] in '+-':
                addr += int(p[0] + '1') * int(p[1:], 0)
            else:
                addr = int(p, 0)
            if after_calls:
                after_calls = False
                continue
            if cur_ob == obj and len(tok) >= 3:
                per[addr] += int(tok[2])
            continue
        m = re.match(r'(ob|cob)=\((\d+)\)(?: (.*))?$', l)
        if m:
            k, i, name = m.groups()
            if name: ob_names[i] = name
            if k == 'ob': cur_ob = ob_names.get(i)
            continue
        if l.startswith('calls='):
            after_calls = True
    return per

obj, rate = sys.argv[1], float(sys.argv[2])
rest = sys.argv[3:]
hot = set()
for i in range(0, len(rest), 3):
    a, b, dn = counts(rest[i], obj), counts(rest[i + 1], obj), int(rest[i + 2])
    for addr in set(b) | set(a):
        if (b[addr] - a[addr]) / dn >= rate:
            hot.add(addr >> 6)
hot = sorted(hot)
ranges = []
for k in hot:
    if ranges and k - ranges[-1][1] <= 2:
        ranges[-1][1] = k
    else:
        ranges.append([k, k])
print(len(hot), "lines,", len(ranges), "ranges,", sum(b - a + 1 for a, b in ranges),
      "lines prefetched", file=sys.stderr)
print(",".join("%x:%x" % (a * 64, (b - a + 1) * 64) for a, b in ranges))
