#!/usr/bin/env python3
"""claim-files.py: the files and packages of Berth's module on a claim's path.

Usage: go tool pprof -traces -lines CPU.pprof | scripts/lib/claim-files.py [MIN_MS]

Reads the stacks of a CPU profile taken under POST /claims
(scripts/claim-profile.sh) and counts, per file of the module, the samples
of every stack that runs under the request (httpapi.(*Server).ServeHTTP)
or in the claim writer's goroutine (the group writer of ledger/internal/core,
resources' claim writers), each stack once per file. Files with fewer than
MIN_MS milliseconds of samples (default 0) are left out: at 10 ms a sample,
a file seen once or twice may be chance. Prints the files by package.
"""
import re, sys, collections
text = sys.stdin.read()
traces = text.split('-----------+-------------------------------------------------------')
mod = 'github.com/berthd/berth/'
files = collections.Counter()
kinds = collections.Counter()
for t in traces:
    lines = [l.strip() for l in t.strip().split('\n') if l.strip()]
    if not lines:
        continue
    m = re.match(r'(\d+(?:\.\d+)?)(ms|s)\s+(.*)', lines[0])
    if not m:
        continue
    ms = float(m.group(1)) * (1000 if m.group(2) == 's' else 1)
    frames = [m.group(3)] + lines[1:]
    joined = '\n'.join(frames)
    if 'httpapi.(*Server).ServeHTTP' in joined:
        kind = 'request'
    elif 'resources.(*claimWriters)' in joined or 'resources.(*claimWriter)' in joined or 'core.(*GroupWriter)' in joined or 'group_writer' in joined:
        kind = 'writer'
    else:
        continue
    kinds[kind] += ms
    seen = set()
    for f in frames:
        fm = re.match(r'(\S+)\s+(\S+\.go):\d+', f)
        if not fm or not fm.group(1).startswith(mod):
            continue
        path = fm.group(2)
        # The file as package/file.go, the package read from the function's
        # name (the binary's own paths depend on where it was built).
        name = fm.group(1)[len(mod):].split('[')[0]
        slash = name.rfind('/')
        pkg = name[:name.index('.', slash + 1)]
        path = pkg + '/' + path.rsplit('/', 1)[-1]
        if path not in seen:
            seen.add(path)
            files[path] += ms
MIN = float(sys.argv[1]) if len(sys.argv) > 1 else 0
files = collections.Counter({k: v for k, v in files.items() if v >= MIN})
print('ms by kind:', dict(kinds))
pk = collections.defaultdict(list)
for f in sorted(files):
    pk[f.rsplit('/', 1)[0]].append(f.rsplit('/', 1)[1])
print(len(files), 'files in', len(pk), 'packages')
for p in sorted(pk):
    print(' ', p + ':', ', '.join(f"{f} ({files[p + '/' + f]:.0f} ms)" for f in pk[p]))
