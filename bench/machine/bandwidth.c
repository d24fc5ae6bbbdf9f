// Memory bandwidth of one vs two threads, and the cross-core spin ping-pong latency: what
// bounds the pool on this machine. Build and run: gcc -O2 -pthread bench/machine/bandwidth.c -o /tmp/bw && /tmp/bw
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <stdatomic.h>
#define N (64*1024*1024/4)
static float *src, *dst;
static double now(){struct timespec t; clock_gettime(CLOCK_MONOTONIC,&t); return t.tv_sec+t.tv_nsec*1e-9;}
typedef struct {size_t a,b; int reps;} R;
void* work(void* p){ R* r=p; for(int k=0;k<r->reps;k++){ for(size_t i=r->a;i<r->b;i++) dst[i]=src[i]*1.0001f; } return 0;}
atomic_int flag; 
void* pong(void*p){ for(int i=0;i<20000;i++){ while(atomic_load(&flag)!=2*i+1); atomic_store(&flag,2*i+2);} return 0;}
int main(){ src=aligned_alloc(64,N*4); dst=aligned_alloc(64,N*4); for(size_t i=0;i<N;i++){src[i]=i;dst[i]=0;}
 for (int T=1;T<=2;T++){ pthread_t th[2]; R r[2]; double t0=now(); for(int t=0;t<T;t++){r[t].a=N/T*t; r[t].b=N/T*(t+1); r[t].reps=5; pthread_create(&th[t],0,work,&r[t]);} for(int t=0;t<T;t++) pthread_join(th[t],0); double dt=now()-t0; printf("T=%d: %.1f GB/s (r+w)\n",T, 5.0*N*8/dt/1e9);}
 pthread_t p; pthread_create(&p,0,pong,0); double t0=now(); for(int i=0;i<20000;i++){ atomic_store(&flag,2*i+1); while(atomic_load(&flag)!=2*i+2);} printf("spin pingpong %.2f us\n",(now()-t0)/20000*1e6); pthread_join(p,0);
}
