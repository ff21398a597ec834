// Cross-CPU wake-up cost on this machine (bench/README.md, "Where the request's threads run"):
// two threads echo 4 bytes over a Unix socket pair, 20,000 round trips; p50/p90/p99 per round trip.
// gcc -O2 -pthread -o /tmp/pp wakeup_pingpong.c && /tmp/pp 0 0 && /tmp/pp 0 1 && /tmp/pp -1 -1
// Arguments: CPU of the timing thread, CPU of the echo thread (-1: unpinned), 1 to add a SCHED_IDLE
// busy loop on each of CPUs 0 and 1.
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
static int sv[2]; static int cpuA=-1,cpuB=-1; static int N=20000;
static void pin(int c){ if(c<0)return; cpu_set_t s; CPU_ZERO(&s); CPU_SET(c,&s); pthread_setaffinity_np(pthread_self(),sizeof s,&s);}
static void* echo(void*a){ pin(cpuB); char b[64]; for(;;){ ssize_t n=read(sv[1],b,64); if(n<=0)return 0; write(sv[1],b,n);} }
static int cmp(const void*a,const void*b){ long x=*(long*)a,y=*(long*)b; return x<y?-1:x>y;}
static void* spinner(void*a){ long c=(long)a; pin((int)c); struct sched_param p={0}; pthread_setschedparam(pthread_self(),SCHED_IDLE,&p); for(;;){ __asm__ volatile("pause"); } return a; }
int main(int argc,char**argv){ if(argc>1)cpuA=atoi(argv[1]); if(argc>2)cpuB=atoi(argv[2]);
 if(argc>3&&atoi(argv[3])){ for(long c=0;c<2;c++){ pthread_t x; pthread_create(&x,0,spinner,(void*)c);} }
 socketpair(AF_UNIX,SOCK_STREAM,0,sv); pthread_t t; pthread_create(&t,0,echo,0); pin(cpuA);
 long*ts=malloc(N*sizeof(long)); char b[64]="ping";
 for(int i=0;i<N;i++){ struct timespec s,e; clock_gettime(CLOCK_MONOTONIC,&s); write(sv[0],b,4); read(sv[0],b,64); clock_gettime(CLOCK_MONOTONIC,&e); ts[i]=(e.tv_sec-s.tv_sec)*1000000000L+(e.tv_nsec-s.tv_nsec); usleep(0);} 
 qsort(ts,N,sizeof(long),cmp); printf("cpus %d/%d rtt p50 %.1f us p90 %.1f p99 %.1f\n",cpuA,cpuB,ts[N/2]/1e3,ts[N*9/10]/1e3,ts[N*99/100]/1e3); return 0;}
