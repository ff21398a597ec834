#!/usr/bin/env python3
"""Side-by-side parity check: run the same raw requests against the real nats-server (found on
PATH) and a candidate server binary, print every response that differs after normalising
timestamps, ids and the server version.

usage: side_by_side.py CANDIDATE_BINARY CORPUS_FILE

Corpus lines: SUBJECT<TAB>PAYLOAD<TAB>Header=Value;Header=Value (payload and headers optional,
lines starting with # ignored). Each server gets `-a 127.0.0.1 -p <free port> -js -sd <temp>`.
Known difference: a request with no responders gets a 503 status from nats-server; ours times out
until core routing answers no-responders.
"""
import subprocess, socket, sys, time, json, re, tempfile, os, base64
OURS=sys.argv[1]; REF=subprocess.check_output(['which','nats-server']).decode().strip()
def free_port():
    s=socket.socket(); s.bind(('127.0.0.1',0)); p=s.getsockname()[1]; s.close(); return p
def start(binary):
    d=tempfile.mkdtemp(); port=free_port()
    p=subprocess.Popen([binary,'-a','127.0.0.1','-p',str(port),'-js','-sd',d],stdout=subprocess.DEVNULL,stderr=subprocess.DEVNULL)
    for _ in range(100):
        try:
            socket.create_connection(('127.0.0.1',port)).close(); break
        except OSError: time.sleep(0.05)
    return p,port
class Conn:
    def __init__(self,port):
        self.s=socket.create_connection(('127.0.0.1',port)); self.s.settimeout(1.5); self.buf=b''
        self.line()
        self.s.sendall(b'CONNECT {"verbose":false,"headers":true,"no_responders":true,"protocol":1}\r\nSUB _R.> 1\r\nPING\r\n')
        while not self.line().startswith(b'PONG'): pass
        self.n=0
    def fill(self):
        d=self.s.recv(65536)
        if not d: raise EOFError
        self.buf+=d
    def line(self):
        while b'\r\n' not in self.buf: self.fill()
        i=self.buf.index(b'\r\n')+2; l=self.buf[:i]; self.buf=self.buf[i:]; return l
    def read(self,n):
        while len(self.buf)<n: self.fill()
        d=self.buf[:n]; self.buf=self.buf[n:]; return d
    def req(self,subj,payload='',headers=None):
        self.n+=1; reply=f'_R.{self.n}'.encode(); p=payload.encode()
        if headers:
            hb=('NATS/1.0\r\n'+''.join(f'{k}: {v}\r\n' for k,v in headers)+'\r\n').encode()
            self.s.sendall(b'HPUB %s %s %d %d\r\n%s%s\r\n'%(subj.encode(),reply,len(hb),len(hb)+len(p),hb,p))
        else:
            self.s.sendall(b'PUB %s %s %d\r\n%s\r\n'%(subj.encode(),reply,len(p),p))
        try:
            while True:
                l=self.line()
                if l.startswith(b'PING'): self.s.sendall(b'PONG\r\n'); continue
                parts=l.split()
                if parts[0]==b'MSG':
                    return ('', self.read(int(parts[-1])+2)[:-2].decode(errors='replace'))
                if parts[0]==b'HMSG':
                    hl=int(parts[-2]); tl=int(parts[-1]); d=self.read(tl+2)[:-2]
                    return (d[:hl].decode(), d[hl:].decode(errors='replace'))
        except socket.timeout:
            return ('TIMEOUT','')
def norm(text):
    text=re.sub(r'"\d{4}-\d\d-\d\dT[0-9:.]+Z"','"TS"',text)
    text=text.replace('"0001-01-01T00:00:00Z"','"ZERO"') if False else text
    text=re.sub(r'"(leader|server_id|id)":"[^"]*"','"\\1":"X"',text)
    text=re.sub(r'Nats-Time-Stamp: [^\r]*','Nats-Time-Stamp: TS',text)
    text=re.sub(r'"_nats.ver":"[^"]*"','"_nats.ver":"V"',text)
    return text
script=[l for l in open(sys.argv[2]).read().split('\n') if l.strip() and not l.startswith('#')]
rp,rport=start(REF); op,oport=start(OURS)
try:
    rc=Conn(rport); oc=Conn(oport); diffs=0
    for line in script:
        parts=line.split('\t')
        subj=parts[0]; payload=parts[1] if len(parts)>1 else ''; headers=None
        if len(parts)>2: headers=[tuple(h.split('=',1)) for h in parts[2].split(';')]
        r=rc.req(subj,payload,headers); o=oc.req(subj,payload,headers)
        rn=(norm(r[0]),norm(r[1])); on=(norm(o[0]),norm(o[1]))
        if rn!=on:
            diffs+=1
            print(f'DIFF {subj} {payload[:80]}\n  ref : {rn}\n  ours: {on}')
    print(f'{diffs} differences over {len(script)} requests')
finally:
    rp.kill(); op.kill()
