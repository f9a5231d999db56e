/*
 * kernel_equal.c — two builds of benchmarks/kernel_equal_lib.c (usage there) give the same
 * depthwise conv2d (with epilogues, strides 1-3, dilation, batches, NaN/Inf/-0 inputs and an
 * infinite weight), average pool (include_pad, extra ceil rows, dilation), global average
 * pool and max pool outputs: bit for bit, a NaN equal to any NaN; the second build also at 2
 * threads. Prints the mismatches and "N cases, M mismatches"; exit status 1 on any.
 * Figures: benchmarks/results/kernel_equal.md.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <math.h>
static int same(const float*a,const float*b,size_t n){for(size_t i=0;i<n;i++){if(isnan(a[i])&&isnan(b[i]))continue; if(memcmp(a+i,b+i,4))return 0;}return 1;}
typedef void (*dw_t)(const float*, const float*, const float*, const float*, const float*, float*, float*, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int32_t, int32_t, int);
typedef void (*avg_t)(const float*, float*, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int32_t, int, int64_t);
typedef void (*gavg_t)(const float*, float*, int64_t, int64_t, int);
static uint64_t st=88172645463325252ull; static float rnd(void){st^=st<<13;st^=st>>7;st^=st<<17; return (float)((double)(st>>11)/(double)(1ull<<53)*2-1);}
int main(int argc,char**argv){
  void* A=dlopen(argv[1],RTLD_NOW|RTLD_LOCAL); void* B=dlopen(argv[2],RTLD_NOW|RTLD_LOCAL);
  if(!A||!B){printf("dlopen %s\n",dlerror());return 1;}
  dw_t da=(dw_t)dlsym(A,"run_dw"), db=(dw_t)dlsym(B,"run_dw");
  avg_t aa=(avg_t)dlsym(A,"run_avg"), ab=(avg_t)dlsym(B,"run_avg");
  int bad=0, ncase=0;
  int shapes[][6]={{136,28,3,1,1,1},{272,14,3,1,1,1},{544,7,3,1,1,1},{112,56,3,2,1,1},{136,28,3,2,1,1},{13,15,3,2,1,1},{5,19,3,1,2,2},{7,11,5,1,2,1},{9,33,3,3,1,1},{6,4,3,1,1,1},{3,2,3,1,1,1},{10,17,5,2,2,1},{4,23,7,2,3,1},{8,9,3,2,0,1},{11,30,3,1,0,1},{6,12,3,2,2,2},{2,1,3,1,1,1},{5,-3,3,1,1,1},{5,-2,3,1,1,1},{4,-1,3,1,1,1},{3,-5,3,2,1,1},{3,-9,3,1,1,1},{7,-7,3,1,1,1}};
  int ns=sizeof shapes/sizeof shapes[0];
  for(int si=0;si<ns;si++) for(int N=1;N<=2;N++) for(int parts=0;parts<4;parts++){
    int C=shapes[si][0],H=shapes[si][1]>0?shapes[si][1]+(parts&1):20+parts,W=shapes[si][1]>0?shapes[si][1]+((parts>>1)&1)*3:-shapes[si][1],K=shapes[si][2],S=shapes[si][3],P=shapes[si][4],D=shapes[si][5];
    int OH=(H+2*P-D*(K-1)-1)/S+1, OW=(W+2*P-D*(K-1)-1)/S+1; if(OH<1||OW<1) continue;
    size_t nx=(size_t)N*C*H*W, ny=(size_t)N*C*OH*OW;
    float*x=malloc(4*nx),*w=malloc(4*C*K*K),*b=malloc(4*C),*s=malloc(4*C),*t=malloc(4*C),*y1=malloc(4*ny),*y2=malloc(4*ny),*y3=malloc(4*ny);
    size_t scr=(size_t)C*((OH-1)*S+(K-1)*D+1)*(((OW+7)/8*8-1)*S+(K-1)*D+1)+64; float*sc=malloc(4*scr);
    for(size_t i=0;i<nx;i++){x[i]=rnd(); if(i%97==5) x[i]=NAN; if(i%131==7) x[i]=INFINITY; if(i%89==3) x[i]=-0.0f;}
    for(int i=0;i<C*K*K;i++){w[i]=rnd(); if(i%53==4) w[i]=-0.0f;} if(si==5) w[3]=INFINITY;
    for(int i=0;i<C;i++){b[i]=rnd();s[i]=rnd();t[i]=rnd();}
    int act=si%4; 
    memset(y1,0x55,4*ny);memset(y2,0x66,4*ny);memset(y3,0x77,4*ny);
    da(x,w,b,s,t,y1,sc,N,C,H,W,C,K,OH,OW,S,P,D,parts,act,1);
    db(x,w,b,s,t,y2,sc,N,C,H,W,C,K,OH,OW,S,P,D,parts,act,1);
    db(x,w,b,s,t,y3,sc,N,C,H,W,C,K,OH,OW,S,P,D,parts,act,2);
    ncase++;
    for(size_t i=0;i<ny;i++) if(!same(y1+i,y2+i,1)){printf("first diff at %zu (oh %zu ow %zu): %g vs %g (3: %g)\n",i,(i/OW)%OH,i%OW,y1[i],y2[i],y3[i]);break;}
    if(!same(y1,y2,ny)||!same(y1,y3,ny)){bad++; printf("DW MISMATCH C=%d H=%d W=%d K=%d S=%d P=%d D=%d N=%d parts=%d\n",C,H,W,K,S,P,D,N,parts);}
    free(x);free(w);free(b);free(s);free(t);free(y1);free(y2);free(y3);free(sc);
  }
  int ps[][5]={{272,14,3,2,1},{24,56,3,2,1},{136,28,3,2,1},{544,7,7,1,0},{40,29,3,1,1},{64,40,3,2,1},{13,9,3,2,1},{5,5,2,2,0},{7,31,5,3,2},{3,2,3,1,1},{1000,13,13,1,0},{6,8,3,2,1},{3,70,3,1,1},{2,1200,3,1,1},{5,9,2,1,0},{4,5,5,1,2},{9,6,3,2,1},{17,3,3,1,1},{11,2,2,2,1}};
  for(int si=0;si<(int)(sizeof ps/sizeof ps[0]);si++) for(int inc=0;inc<2;inc++) for(int pb=0;pb<2;pb++) for(int D=1;D<=2;D++){
    int NC=ps[si][0],H=ps[si][1],K=ps[si][2],S=ps[si][3],P=ps[si][4]; int W=H+(pb?1:0);int PB=P+(pb&&P>0?0:0);
    int OH=(H+P+PB-D*(K-1)-1)/S+1, OW=(W+P+PB-D*(K-1)-1)/S+1; if(pb){OH+=1;} /* ceil-mode-like extra row */
    if(OH<1||OW<1)continue;
    size_t nx=(size_t)NC*H*W, ny=(size_t)NC*OH*OW;
    float*x=malloc(4*nx),*y1=malloc(4*ny),*y2=malloc(4*ny),*y3=malloc(4*ny);
    for(size_t i=0;i<nx;i++){x[i]=rnd()*1000; if(i%97==5) x[i]=NAN; if(i%131==7) x[i]=-INFINITY; if(i%7==3) x[i]=-0.0f;}
    aa(x,y1,NC,H,W,OH,OW,K,S,P,PB,inc,1,D); ab(x,y2,NC,H,W,OH,OW,K,S,P,PB,inc,1,D); ab(x,y3,NC,H,W,OH,OW,K,S,P,PB,inc,2,D);
    ncase++;
    if(!same(y1,y2,ny)||!same(y1,y3,ny)){bad++; printf("AVG MISMATCH NC=%d H=%d W=%d K=%d S=%d P=%d PB=%d inc=%d\n",NC,H,W,K,S,P,PB,inc);}
    free(x);free(y1);free(y2);free(y3);
  }
  gavg_t ga=(gavg_t)dlsym(A,"run_gavg"), gb=(gavg_t)dlsym(B,"run_gavg");
  int gs[][2]={{1000,169},{544,49},{13,7},{7,1},{2048,49},{3,100000}};
  for(int si=0;si<6;si++){int NC=gs[si][0],HW=gs[si][1]; float*x=malloc(4*(size_t)NC*HW),*y1=malloc(4*NC),*y2=malloc(4*NC),*y3=malloc(4*NC);
    for(size_t i=0;i<(size_t)NC*HW;i++){x[i]=rnd()*1000; if(i%97==5) x[i]=NAN; if(i%7==3) x[i]=-0.0f;}
    ga(x,y1,NC,HW,1); gb(x,y2,NC,HW,1); gb(x,y3,NC,HW,2); ncase++;
    if(!same(y1,y2,NC)||!same(y1,y3,NC)){bad++;printf("GAVG MISMATCH %d %d\n",NC,HW);} free(x);free(y1);free(y2);free(y3);}
  typedef void (*max_t)(const float*, float*, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int);
  max_t ma=(max_t)dlsym(A,"run_max"), mb=(max_t)dlsym(B,"run_max");
  int ms[][5]={{24,112,3,2,1},{96,109,3,2,0},{64,112,3,2,1},{7,70,3,1,1},{5,200,2,2,0},{3,33,3,2,1},{4,300,3,3,1},{2,41,5,1,2}};
  for(int si=0;si<8;si++) for(int D=1;D<=2;D++){int NC=ms[si][0],H=ms[si][1],K=ms[si][2],S=ms[si][3],P=ms[si][4],W=H+si;
    int OH=(H+2*P-D*(K-1)-1)/S+1, OW=(W+2*P-D*(K-1)-1)/S+1; size_t nx=(size_t)NC*H*W, ny=(size_t)NC*OH*OW;
    float*x=malloc(4*nx),*y1=malloc(4*ny),*y2=malloc(4*ny),*y3=malloc(4*ny);
    for(size_t i=0;i<nx;i++){x[i]=rnd(); if(i%97==5) x[i]=NAN; if(i%31==7) x[i]=-INFINITY; if(i%7==3) x[i]=-0.0f; if(i%11==2) x[i]=0.0f;}
    ma(x,y1,NC,H,W,OH,OW,K,S,P,D,1); mb(x,y2,NC,H,W,OH,OW,K,S,P,D,1); mb(x,y3,NC,H,W,OH,OW,K,S,P,D,2); ncase++;
    if(memcmp(y1,y2,4*ny)||memcmp(y1,y3,4*ny)){bad++;printf("MAX MISMATCH %d %d %d %d %d D%d\n",NC,H,K,S,P,D);} free(x);free(y1);free(y2);free(y3);}
  printf("%d cases, %d mismatches\n",ncase,bad); return bad!=0;
}
