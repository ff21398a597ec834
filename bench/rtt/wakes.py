#!/usr/bin/env python3
# Wake-ups of a server process's threads in a `perf sched record -a` file (bench/README.md,
# "Wake-ups per round trip"): by a thread of the same process (internal) or another (external), on
# the waker's CPU (same) or another (cross), with the scheduling delay.
import sys,re,subprocess,collections
# usage: wakes.py sched.data PID [PID...] : per server pid, wake-ups of its threads: same/cross CPU, sched delay
data=sys.argv[1]; pids=set(sys.argv[2:])
out=subprocess.run(['perf','sched','timehist','-i',data,'-w'],capture_output=True,text=True).stdout.splitlines()
wake_re=re.compile(r'\s*([\d.]+)\s+\[(\d+)\]\s+(\S+)\s+awakened: (\S+)')
run_re=re.compile(r'\s*([\d.]+)\s+\[(\d+)\]\s+(\S+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)')
def ids(task):
    m=re.match(r'(.*)\[(\d+)(?:/(\d+))?\]',task)
    if not m: return task,None,None
    return m.group(1),m.group(2),m.group(3) or m.group(2)
pending={}
stats=collections.defaultdict(lambda: collections.Counter())
delay=collections.defaultdict(list)
threads=collections.defaultdict(collections.Counter)
for line in out:
    m=wake_re.match(line)
    if m:
        t,cpu,waker,wakee=m.groups()
        n,tid,pid=ids(wakee)
        wn,wtid,wpid=ids(waker)
        pending[tid]=(float(t),cpu,wpid in pids and wpid==pid, wn)
        continue
    m=run_re.match(line)
    if m:
        t,cpu,task,wait,sch,run=m.groups()
        n,tid,pid=ids(task)
        if pid in pids:
            threads[pid][tid]+=1
        if tid in pending:
            wt,wcpu,internal,wn=pending.pop(tid)
            if pid in pids:
                kind=('internal-' if internal else 'external-')+('same' if wcpu==cpu else 'cross')
                stats[pid][kind]+=1
                delay[(pid,kind)].append(float(sch)*1000)
for pid in pids:
    print('pid',pid,'thread runs',dict(threads[pid]),'wakes',dict(stats[pid]))
    for k in sorted(stats[pid]):
        d=sorted(delay[(pid,k)]); 
        if d: print('   ',k,'n',len(d),'sched-delay p50 %.1f us p90 %.1f us'%(d[len(d)//2],d[int(len(d)*.9)]))
