/* A kernel's work in parts on threads of its own: vm_run_parts(fn, ctx, parts) calls
 * fn(ctx, part) once for each part in [0, parts) and returns when every one has returned.
 * The calling thread and the threads started for the call take the parts in turn, each the
 * next one nobody has taken: where a thread is slow to start (every core busy), the
 * calling thread takes its parts too rather than wait for it. A thread that finds no part
 * left ends without touching ctx; the little block they share is freed by the last one to
 * let go of it. The parts write disjoint slices of the output, so the result is the same
 * whichever thread runs a part. Where a thread cannot be started (or on a system without
 * POSIX threads), the calling thread runs every part. Called without the GIL; fn must not
 * touch Python objects or allocate with the Python allocator. Included by each extension
 * that splits (static inline: no symbols).
 */
#ifndef VOCMATCH_PARTS_H
#define VOCMATCH_PARTS_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#if !defined(_WIN32) && !defined(__STDC_NO_ATOMICS__)
#include <pthread.h>
#include <stdatomic.h>
#define VM_PARTS_THREADS 1
#endif

/* The most parts a call is split into. */
#define VM_MAX_PARTS 8

/* Parts a thread where parts are cheap: the threads take them in turn, so that a thread
 * slowed by other work on its core leaves more of them to the others. */
#define VM_PARTS_PER_THREAD 4

/* `threads` clamped to [1, VM_MAX_PARTS]. */
static inline int vm_threads(int threads)
{
    return threads < 1 ? 1 : (threads > VM_MAX_PARTS ? VM_MAX_PARTS : threads);
}

/* The parts of a call on `threads` threads where parts are cheap (1 for one thread). */
static inline int vm_fine_parts(int threads)
{
    const int t = vm_threads(threads);
    return t > 1 ? (t * VM_PARTS_PER_THREAD > VM_MAX_PARTS ? VM_MAX_PARTS
                                                           : t * VM_PARTS_PER_THREAD)
                 : 1;
}

typedef void (*vm_part_fn)(void *ctx, int part);

#ifdef VM_PARTS_THREADS
/* What the threads of one call share (on the heap: a thread may outlive the call). */
typedef struct {
    vm_part_fn fn;
    void *ctx;
    int parts;
    atomic_int next; /* the next part to take */
    atomic_int done; /* parts that have returned */
    atomic_int refs; /* the calling thread and each started thread still holding the block */
    pthread_mutex_t lock;
    pthread_cond_t all_done;
} vm_parts_shared;

static void vm_parts_release(vm_parts_shared *s)
{
    if (atomic_fetch_sub(&s->refs, 1) == 1) {
        pthread_cond_destroy(&s->all_done);
        pthread_mutex_destroy(&s->lock);
        free(s);
    }
}

/* Run the parts nobody has taken, one after the other. */
static void vm_parts_take(vm_parts_shared *s)
{
    for (;;) {
        const int part = atomic_fetch_add(&s->next, 1);
        if (part >= s->parts)
            return;
        s->fn(s->ctx, part);
        if (atomic_fetch_add(&s->done, 1) + 1 == s->parts) {
            pthread_mutex_lock(&s->lock);
            pthread_cond_broadcast(&s->all_done);
            pthread_mutex_unlock(&s->lock);
        }
    }
}

static void *vm_parts_main(void *arg)
{
    vm_parts_shared *s = arg;
    vm_parts_take(s);
    vm_parts_release(s);
    return NULL;
}
#endif

/* fn(ctx, part) for every part in [0, parts) (parts clamped to [1, VM_MAX_PARTS]), taken
 * by the calling thread and at most threads - 1 threads started for them. */
static inline void vm_run_parts_on(vm_part_fn fn, void *ctx, int parts, int threads)
{
    parts = vm_threads(parts);
    threads = vm_threads(threads) < parts ? vm_threads(threads) : parts;
#ifdef VM_PARTS_THREADS
    vm_parts_shared *s = threads > 1 ? malloc(sizeof *s) : NULL;
    if (s != NULL) {
        s->fn = fn;
        s->ctx = ctx;
        s->parts = parts;
        atomic_init(&s->next, 0);
        atomic_init(&s->done, 0);
        atomic_init(&s->refs, 1);
        if (pthread_mutex_init(&s->lock, NULL) != 0) {
            free(s);
            s = NULL;
        } else if (pthread_cond_init(&s->all_done, NULL) != 0) {
            pthread_mutex_destroy(&s->lock);
            free(s);
            s = NULL;
        }
    }
    if (s != NULL) {
        pthread_attr_t attr;
        const int attr_made = pthread_attr_init(&attr) == 0;
        const int detached =
            attr_made && pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED) == 0;
        for (int t = 1; detached && t < threads; t++) {
            pthread_t thread;
            atomic_fetch_add(&s->refs, 1);
            if (pthread_create(&thread, &attr, vm_parts_main, s) != 0) {
                atomic_fetch_sub(&s->refs, 1);
                break;
            }
        }
        if (attr_made)
            pthread_attr_destroy(&attr);
        vm_parts_take(s);
        /* Every part taken; wait for those still running on other threads. */
        pthread_mutex_lock(&s->lock);
        while (atomic_load(&s->done) < parts)
            pthread_cond_wait(&s->all_done, &s->lock);
        pthread_mutex_unlock(&s->lock);
        vm_parts_release(s);
        return;
    }
#endif
    for (int p = 0; p < parts; p++)
        fn(ctx, p);
}

/* fn(ctx, part) for every part in [0, parts), a thread a part. */
static inline void vm_run_parts(vm_part_fn fn, void *ctx, int parts)
{
    vm_run_parts_on(fn, ctx, parts, parts);
}

/* The start of part `part` of `parts` over [0, n): equal ranges, the first ones larger. */
static inline ptrdiff_t vm_part_start(ptrdiff_t n, int part, int parts)
{
    const ptrdiff_t size = n / parts, more = n % parts;
    return (ptrdiff_t)part * size + (part < more ? part : more);
}

#endif
