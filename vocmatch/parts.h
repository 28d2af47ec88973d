/* A kernel's work in parts on threads of its own: vm_run_parts(fn, ctx, parts) calls
 * fn(ctx, part) for each part in [0, parts): part 0 in the calling thread, each other on a
 * thread started for it, every thread joined before it returns (none outlives the call, so
 * calls from several threads at once each run their own). Where a thread cannot be started
 * (or on a system without POSIX threads), that part runs in the calling thread after part 0:
 * the parts write disjoint slices of the output, so the result is the same whichever thread
 * runs a part. Called without the GIL; fn must not touch Python objects. Included by each
 * extension that splits (static inline: no symbols).
 */
#ifndef VOCMATCH_PARTS_H
#define VOCMATCH_PARTS_H

#include <stddef.h>
#include <stdint.h>

#if !defined(_WIN32)
#include <pthread.h>
#define VM_PARTS_THREADS 1
#endif

/* The most parts a call is split into. */
#define VM_MAX_PARTS 8

typedef void (*vm_part_fn)(void *ctx, int part);

#ifdef VM_PARTS_THREADS
typedef struct {
    vm_part_fn fn;
    void *ctx;
    int part;
} vm_part_job;

static void *vm_part_main(void *arg)
{
    const vm_part_job *job = arg;
    job->fn(job->ctx, job->part);
    return NULL;
}
#endif

/* fn(ctx, part) for every part in [0, parts) (parts clamped to [1, VM_MAX_PARTS]). */
static inline void vm_run_parts(vm_part_fn fn, void *ctx, int parts)
{
    if (parts < 1)
        parts = 1;
    if (parts > VM_MAX_PARTS)
        parts = VM_MAX_PARTS;
#ifdef VM_PARTS_THREADS
    pthread_t thread[VM_MAX_PARTS];
    vm_part_job job[VM_MAX_PARTS];
    int started[VM_MAX_PARTS] = {0};
    for (int p = 1; p < parts; p++) {
        job[p].fn = fn;
        job[p].ctx = ctx;
        job[p].part = p;
        started[p] = pthread_create(&thread[p], NULL, vm_part_main, &job[p]) == 0;
    }
    fn(ctx, 0);
    for (int p = 1; p < parts; p++) {
        if (started[p])
            pthread_join(thread[p], NULL);
        else
            fn(ctx, p);
    }
#else
    for (int p = 0; p < parts; p++)
        fn(ctx, p);
#endif
}

/* The start of part `part` of `parts` over [0, n): equal ranges, the first ones larger. */
static inline ptrdiff_t vm_part_start(ptrdiff_t n, int part, int parts)
{
    const ptrdiff_t size = n / parts, more = n % parts;
    return (ptrdiff_t)part * size + (part < more ? part : more);
}

#endif
