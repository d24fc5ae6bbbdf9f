// Round trip of a futex wake between two threads: what waking a sleeping pool worker costs.
// Build and run: gcc -O2 -pthread bench/machine/futex-pingpong.c -o /tmp/fw && /tmp/fw
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <pthread.h>
#include <stdio.h>
#include <stdatomic.h>
#include <time.h>
static atomic_int f;
static double now(){struct timespec t; clock_gettime(CLOCK_MONOTONIC,&t); return t.tv_sec+t.tv_nsec*1e-9;}
static void fwait(atomic_int* a, int v){ syscall(SYS_futex, a, FUTEX_WAIT_PRIVATE, v, 0,0,0);}
static void fwake(atomic_int* a){ syscall(SYS_futex, a, FUTEX_WAKE_PRIVATE, 1, 0,0,0);}
#define N 5000
void* pong(void*p){ for(int i=0;i<N;i++){ while(atomic_load(&f)!=2*i+1) fwait(&f,2*i); atomic_store(&f,2*i+2); fwake(&f);} return 0;}
int main(){ pthread_t p; pthread_create(&p,0,pong,0); double t0=now(); for(int i=0;i<N;i++){ atomic_store(&f,2*i+1); fwake(&f); while(atomic_load(&f)!=2*i+2) fwait(&f,2*i+1);} printf("futex pingpong %.2f us\n",(now()-t0)/N*1e6); pthread_join(p,0);}
