/* The compiled matching kernels: the same bits as the numpy matchers of vocmatch.core.match,
 * used through vocmatch.core.match_kernels (which checks the arrays' dtypes and shapes).
 *
 *   - set_bits: each prediction's flag bits from matched pairs (threshold, prediction);
 *   - ranked_pass: the "unmatched" (or "unmatched-first") rule of ranked predictions in one
 *     pass over the pairs: the evaluation's own matching, its matched pairs as
 *     RankedMatcher.add gives them, and with it COCO's area ranges, one matching state per
 *     (range, threshold), each range ignoring its own ground truth, straight into their
 *     flags (a range ignoring what the evaluation ignores takes the evaluation's picks);
 *   - devkit_flags: the VOC devkit's rule, one state per (set, threshold), into flags;
 *   - devkit_hits: the devkit rule's matched pairs under one set, as match_devkit gives them;
 *   - score_cell_order: predictions in the stable order by descending score, and by cell,
 *     then descending score, then index (counting and radix sorts: numpy's stable order);
 *   - alike_cells: where an area range is matched as the evaluation is, cell by cell;
 *   - cell_pairs: every pair of small image-classes, in the pair scan's order;
 *   - sorted_cells: the predictions' columns in score_cell_order's order, the score order
 *     as places in it and each one's rank in its image-class, in one pass;
 *   - class_order: every class's members and ranking by a counting sort (class_ranking);
 *   - mark_pairs: each ground truth's matched flag at every threshold from the pairs;
 *   - hit_counts, image_counts: each image's matched pairs, those that count, and its
 *     missed ground truth at every threshold, in one pass each (per_image_counts);
 *   - pair_iou: the IoU of listed pairs of boxes, numpy's float operations of
 *     vocmatch.core.iou one by one, in the same order (PairSpace.iou);
 *   - box_areas: the areas of listed boxes, as box_area computes them (PairSpace's);
 *   - run_means: the mean of each run of values in [0, 1], its sum exactly rounded (what
 *     math.fsum gives) over its length (vocmatch.core.run_means).
 *
 * Safety: every index read from an array is checked against the length of what it indexes
 * (ValueError otherwise) before any is used; the GIL is released around the loops.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "../buffers.h"
#include "../parts.h"

typedef unsigned char u8;

/* --- buffers ------------------------------------------------------------------------ */

/* A buffer of vocmatch/buffers.h and whether it is held (released once, by release). */
typedef struct {
    Py_buffer view;
    int held;
} Buf;

static void release(Buf *b)
{
    if (b->held) {
        PyBuffer_Release(&b->view);
        b->held = 0;
    }
}

/* A C-contiguous buffer (vm_get_buffer) of `kind`, writable when asked. */
static int get(PyObject *obj, Buf *b, vm_kind kind, int writable, const char *name)
{
    if (vm_get_buffer(obj, &b->view, kind, 0, writable, name) < 0)
        return -1;
    b->held = 1;
    return 0;
}

static inline Py_ssize_t count(const Buf *b) { return vm_count(&b->view); }

static inline int64_t index_at(const Buf *b, Py_ssize_t i) { return vm_index_at(&b->view, i); }

/* Every index of `b` lies in [0, n). */
static int check_indices(const Buf *b, int64_t n, const char *name)
{
    Py_ssize_t k = count(b);
    for (Py_ssize_t i = 0; i < k; i++) {
        int64_t v = index_at(b, i);
        if (v < 0 || v >= n) {
            PyErr_Format(PyExc_ValueError, "%s[%zd] = %lld is out of range [0, %lld)", name,
                         i, (long long)v, (long long)n);
            return -1;
        }
    }
    return 0;
}

static inline void or_bit(void *flags, Py_ssize_t size, Py_ssize_t at, int bit)
{
    uint64_t one = (uint64_t)1 << bit;
    switch (size) {
    case 1:
        ((uint8_t *)flags)[at] |= (uint8_t)one;
        break;
    case 2:
        ((uint16_t *)flags)[at] |= (uint16_t)one;
        break;
    case 4:
        ((uint32_t *)flags)[at] |= (uint32_t)one;
        break;
    default:
        ((uint64_t *)flags)[at] |= one;
        break;
    }
}

/* Every bit of `mask` set in flags[at] (an integer of `size` bytes holding the mask). */
static inline void or_mask(void *flags, Py_ssize_t size, Py_ssize_t at, uint64_t mask)
{
    switch (size) {
    case 1:
        ((uint8_t *)flags)[at] |= (uint8_t)mask;
        break;
    case 2:
        ((uint16_t *)flags)[at] |= (uint16_t)mask;
        break;
    case 4:
        ((uint32_t *)flags)[at] |= (uint32_t)mask;
        break;
    default:
        ((uint64_t *)flags)[at] |= mask;
        break;
    }
}

static inline int passes(double v, double t, int strict) { return strict ? v > t : v >= t; }

/* The unmatched rule's choice among a prediction's candidates: whether ground truth g (of
 * IoU v; counts: it is not ignored) beats the best so far. Ground truth that counts over
 * ignored, then the higher IoU, then the later one (the earlier one with first). */
static inline int beats(int counts, double v, int64_t g, int best_counts, double best_v,
                        int64_t best, int first)
{
    if (counts != best_counts)
        return counts > best_counts;
    if (v != best_v)
        return v > best_v;
    return first ? g < best : g > best;
}

/* The ground truth a prediction takes at one threshold under the unmatched rule, among its
 * candidate pairs order[a..b) (IoU v_all, ground truth gt), or -1: the IoU passes the
 * threshold, the ground truth is not taken (taken[g * stride]) or is a crowd region, and
 * it beats the others (beats). Its counting flag, IoU and pair go to *best_counts, *best_v
 * and *best_pair. */
static int64_t pick(const Py_ssize_t *order, Py_ssize_t a, Py_ssize_t b, const double *v_all,
                    const Buf *gt, double threshold, int strict, const u8 *taken,
                    Py_ssize_t stride, const u8 *crowd, const u8 *ignore, int first,
                    int *best_counts, double *best_v, Py_ssize_t *best_pair)
{
    int64_t best = -1;
    for (Py_ssize_t j = a; j < b; j++) {
        Py_ssize_t i = order[j];
        double v = v_all[i];
        if (!passes(v, threshold, strict))
            continue;
        int64_t g = index_at(gt, i);
        if (taken[g * stride] && !crowd[g])
            continue;
        int counts = !ignore[g];
        if (best >= 0 && !beats(counts, v, g, *best_counts, *best_v, best, first))
            continue;
        best = g;
        *best_counts = counts;
        *best_v = v;
        *best_pair = i;
    }
    return best;
}

/* --- set_bits ------------------------------------------------------------------------ */

static PyObject *set_bits(PyObject *self, PyObject *args)
{
    PyObject *o_flags, *o_pred, *o_level;
    if (!PyArg_ParseTuple(args, "OOO:set_bits", &o_flags, &o_pred, &o_level))
        return NULL;
    Buf flags = {0}, pred = {0}, level = {0};
    PyObject *result = NULL;
    if (get(o_flags, &flags, VM_INTEGER, 1, "flags") < 0 ||
        get(o_pred, &pred, VM_INDEX, 0, "pred") < 0 ||
        get(o_level, &level, VM_INDEX, 0, "level") < 0)
        goto done;
    Py_ssize_t n = count(&pred);
    if (count(&level) != n) {
        PyErr_SetString(PyExc_ValueError, "pred and level differ in length");
        goto done;
    }
    if (check_indices(&pred, count(&flags), "pred") < 0 ||
        check_indices(&level, 8 * flags.view.itemsize, "level") < 0)
        goto done;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++)
        or_bit(flags.view.buf, flags.view.itemsize, (Py_ssize_t)index_at(&pred, i),
               (int)index_at(&level, i));
    Py_END_ALLOW_THREADS
    Py_INCREF(Py_None);
    result = Py_None;
done:
    release(&flags);
    release(&pred);
    release(&level);
    return result;
}

/* --- ranked_pass ----------------------------------------------------------------------- */

/* A rank's matched pairs as found (prediction by prediction), before they are ordered by
 * threshold: each one's place among the pairs times 2**shift, plus its threshold (8 bytes
 * a pair: its prediction, ground truth and IoU are read from the pairs again). */
typedef struct {
    int64_t *entry;
    Py_ssize_t n, cap;
} HitList;

/* `*p` reallocated to `cap` elements of `size` bytes; left as it was on failure. */
static int grow(void **p, Py_ssize_t cap, size_t size)
{
    void *q = PyMem_Realloc(*p, (size_t)cap * size);
    if (!q)
        return -1;
    *p = q;
    return 0;
}

static int hit_reserve(HitList *h, Py_ssize_t more)
{
    if (h->n + more <= h->cap)
        return 0;
    Py_ssize_t cap = h->cap ? 2 * h->cap : 1024;
    while (cap < h->n + more)
        cap *= 2;
    if (grow((void **)&h->entry, cap, sizeof(int64_t)) < 0)
        return -1;
    h->cap = cap;
    return 0;
}

static void hit_free(HitList *h) { PyMem_Free(h->entry); }

/* Matched pairs written straight into four bytearrays of a known bound (level, pred, gt as
 * int64, iou as float64), cut to their length when returned: the arrays numpy reads. */
typedef struct {
    PyObject *arrays[4];
    int64_t *level, *pred, *gt;
    double *iou;
    Py_ssize_t n;
} Out;

static int out_new(Out *o, Py_ssize_t cap)
{
    for (int i = 0; i < 4; i++) {
        o->arrays[i] = PyByteArray_FromStringAndSize(NULL, (cap ? cap : 1) * 8);
        if (!o->arrays[i])
            return -1;
    }
    o->level = (int64_t *)PyByteArray_AS_STRING(o->arrays[0]);
    o->pred = (int64_t *)PyByteArray_AS_STRING(o->arrays[1]);
    o->gt = (int64_t *)PyByteArray_AS_STRING(o->arrays[2]);
    o->iou = (double *)PyByteArray_AS_STRING(o->arrays[3]);
    o->n = 0;
    return 0;
}

/* The four bytearrays cut to the pairs written, as a tuple (the references handed over). */
static PyObject *out_value(Out *o)
{
    for (int i = 0; i < 4; i++)
        if (PyByteArray_Resize(o->arrays[i], o->n * 8) < 0)
            return NULL;
    PyObject *t = PyTuple_Pack(4, o->arrays[0], o->arrays[1], o->arrays[2], o->arrays[3]);
    return t;
}

static void out_free(Out *o)
{
    for (int i = 0; i < 4; i++)
        Py_CLEAR(o->arrays[i]);
}

/* The passing pairs (keep[i]) of predictions [p_low, p_high), grouped by prediction
 * (stable): `start` holds p_high - p_low + 1 offsets into `order`. */
static int group_by_pred(const Buf *pred, const u8 *keep, int64_t p_low, int64_t p_high,
                         Py_ssize_t **start, Py_ssize_t **order)
{
    Py_ssize_t k = count(pred), span = (Py_ssize_t)(p_high - p_low);
    *start = PyMem_Calloc((size_t)span + 1, sizeof(Py_ssize_t));
    *order = PyMem_Malloc((size_t)(k ? k : 1) * sizeof(Py_ssize_t));
    if (!*start || !*order) {
        PyMem_Free(*start);
        PyMem_Free(*order);
        *start = *order = NULL;
        PyErr_NoMemory();
        return -1;
    }
    Py_ssize_t *s = *start, *o = *order;
    for (Py_ssize_t i = 0; i < k; i++)
        if (keep[i])
            s[index_at(pred, i) - p_low + 1]++;
    for (Py_ssize_t j = 0; j < span; j++)
        s[j + 1] += s[j];
    /* Place each pair, then shift the offsets back. */
    for (Py_ssize_t i = 0; i < k; i++)
        if (keep[i])
            o[s[index_at(pred, i) - p_low]++] = i;
    for (Py_ssize_t j = span; j > 0; j--)
        s[j] = s[j - 1];
    s[0] = 0;
    return 0;
}

/* ranked_pass's pairs that can match (keep) and their grouping by prediction, in parts:
 * each part marks its range of pairs and finds its kept pairs' lowest and highest
 * prediction, their number and whether their predictions never fall (the pair scan lists
 * them so). Where every kept pair's prediction follows the one before, the grouping is
 * the kept pairs in order: each part writes its kept pairs' places (after those of the
 * parts before it) and the starts of the predictions from the one after the last kept
 * prediction before its range to its own last (disjoint ranges). Else one part groups them
 * (group_by_pred). */
typedef struct {
    const Buf *pred;
    const double *v_all;
    double lowest;
    int any_threshold, strict, parts, threads, step;
    u8 *keep;
    Py_ssize_t k;
    int64_t p_low;
    Py_ssize_t *start, *order;
    Py_ssize_t kept[VM_MAX_PARTS], base[VM_MAX_PARTS];
    int64_t low[VM_MAX_PARTS], high[VM_MAX_PARTS], before[VM_MAX_PARTS];
    int rising[VM_MAX_PARTS];
} KeepWork;

static void keep_part(void *ctx, int part)
{
    KeepWork *w = ctx;
    const Py_ssize_t lo = vm_part_start(w->k, part, w->parts);
    const Py_ssize_t hi = vm_part_start(w->k, part + 1, w->parts);
    if (w->step == 0) {
        Py_ssize_t kept = 0;
        int64_t low = 0, high = -1, last = 0;
        int rising = 1;
        for (Py_ssize_t i = lo; i < hi; i++) {
            w->keep[i] = w->any_threshold && passes(w->v_all[i], w->lowest, w->strict);
            if (!w->keep[i])
                continue;
            const int64_t p = index_at(w->pred, i);
            if (!kept) {
                low = p;
                high = p;
            }
            rising &= !kept || p >= last;
            low = p < low ? p : low;
            high = p > high ? p : high;
            last = p;
            kept++;
        }
        w->kept[part] = kept;
        w->low[part] = low;
        w->high[part] = high;
        w->rising[part] = rising;
        return;
    }
    Py_ssize_t x = w->base[part];
    int64_t prev = w->before[part]; /* the last kept prediction before, less p_low (or -1) */
    for (Py_ssize_t i = lo; i < hi; i++) {
        if (!w->keep[i])
            continue;
        const int64_t p = index_at(w->pred, i) - w->p_low;
        for (int64_t j = prev + 1; j <= p; j++)
            w->start[j] = x;
        prev = p > prev ? p : prev;
        w->order[x++] = i;
    }
}

/* keep, p_low and p_high, start and order as ranked_pass reads them (see KeepWork). */
static int keep_and_group(KeepWork *w, int64_t *p_low, int64_t *p_high, Py_ssize_t **start,
                          Py_ssize_t **order)
{
    int parts = w->parts;
    if ((Py_ssize_t)parts > w->k)
        parts = w->k > 0 ? (int)w->k : 1;
    w->parts = parts;
    w->step = 0;
    Py_BEGIN_ALLOW_THREADS
    vm_run_parts_on(keep_part, w, parts, w->threads);
    Py_END_ALLOW_THREADS
    int any = 0, rising = 1;
    int64_t low = 0, high = 0, last = -1;
    Py_ssize_t total = 0;
    for (int p = 0; p < parts; p++) {
        w->base[p] = total;
        total += w->kept[p];
        if (!w->kept[p])
            continue;
        rising &= w->rising[p] && (!any || w->low[p] >= last);
        low = any && low < w->low[p] ? low : w->low[p];
        high = any && high > w->high[p] + 1 ? high : w->high[p] + 1;
        last = w->high[p];
        any = 1;
    }
    *p_low = low;
    *p_high = high;
    if (!rising || parts == 1)
        return group_by_pred(w->pred, w->keep, low, high, start, order);
    const Py_ssize_t span = (Py_ssize_t)(high - low);
    *start = PyMem_Malloc(((size_t)span + 1) * sizeof(Py_ssize_t));
    *order = PyMem_Malloc((size_t)(w->k ? w->k : 1) * sizeof(Py_ssize_t));
    if (!*start || !*order) {
        PyMem_Free(*start);
        PyMem_Free(*order);
        *start = *order = NULL;
        PyErr_NoMemory();
        return -1;
    }
    w->p_low = low;
    w->start = *start;
    w->order = *order;
    int64_t prev = -1;
    for (int p = 0; p < parts; p++) {
        w->before[p] = prev;
        if (w->kept[p])
            prev = w->high[p] - low;
    }
    w->step = 1;
    Py_BEGIN_ALLOW_THREADS
    vm_run_parts_on(keep_part, w, parts, w->threads);
    Py_END_ALLOW_THREADS
    for (int64_t j = prev + 1; j <= span; j++)
        (*start)[j] = total;
    return 0;
}

/* The area ranges' states of ranked_pass: S ground-truth sets, each ignoring ground truth
 * of its own, at Tr thresholds. Where alike[s, g], the set's picks in g's image-class are
 * the own matching's (at own level level[tr]): there it ignores what the own matching
 * ignores, or each of the two ignores all or none of the image-class's ground truth. */
typedef struct {
    Buf ignore, thr, taken, matched, ignored, alike, level;
    Py_ssize_t n_sets, n_t, n_pred, size;
} Ranges;

static void ranges_release(Ranges *r)
{
    release(&r->ignore);
    release(&r->thr);
    release(&r->taken);
    release(&r->matched);
    release(&r->ignored);
    release(&r->alike);
    release(&r->level);
}

/* The ranges' buffers from their tuple (ignore, thresholds, taken, matched, ignored,
 * alike, level), checked against n_gt ground truth and n_own own thresholds. */
static int ranges_get(PyObject *tuple, Ranges *r, Py_ssize_t n_gt, Py_ssize_t n_own)
{
    PyObject *o_ignore, *o_thr, *o_taken, *o_matched, *o_ignored, *o_alike, *o_level;
    if (!PyTuple_Check(tuple)) {
        PyErr_SetString(PyExc_TypeError, "ranges: expected a tuple or None");
        return -1;
    }
    if (!PyArg_ParseTuple(tuple, "OOOOOOO:ranges", &o_ignore, &o_thr, &o_taken, &o_matched,
                          &o_ignored, &o_alike, &o_level))
        return -1;
    if (get(o_ignore, &r->ignore, VM_BYTE, 0, "ranges ignore") < 0 ||
        get(o_thr, &r->thr, VM_FLOAT64, 0, "ranges thresholds") < 0 ||
        get(o_taken, &r->taken, VM_BYTE, 1, "ranges taken") < 0 ||
        get(o_matched, &r->matched, VM_INTEGER, 1, "ranges matched") < 0 ||
        get(o_ignored, &r->ignored, VM_INTEGER, 1, "ranges ignored") < 0 ||
        get(o_alike, &r->alike, VM_BYTE, 0, "ranges alike") < 0 ||
        get(o_level, &r->level, VM_INDEX, 0, "ranges level") < 0)
        return -1;
    /* matched is (P, S): its shape gives the predictions and sets. */
    if (r->matched.view.ndim != 2 || !r->matched.view.shape) {
        PyErr_SetString(PyExc_ValueError, "ranges matched is not (P, S)");
        return -1;
    }
    r->n_pred = r->matched.view.shape[0];
    r->n_sets = r->matched.view.shape[1];
    r->n_t = count(&r->thr);
    r->size = r->matched.view.itemsize;
    if (count(&r->ignore) != r->n_sets * n_gt || count(&r->alike) != r->n_sets * n_gt ||
        count(&r->level) != r->n_t || count(&r->taken) != n_gt * r->n_sets * r->n_t ||
        r->n_t > 8 * r->size || r->ignored.view.itemsize != r->size ||
        r->ignored.view.len != r->matched.view.len) {
        PyErr_SetString(PyExc_ValueError, "the ranges' arrays do not fit");
        return -1;
    }
    const u8 *alike = r->alike.view.buf;
    for (Py_ssize_t i = 0; i < r->n_sets * n_gt; i++)
        if (alike[i])
            return check_indices(&r->level, n_own, "ranges level");
    return 0;
}

/* A part's run of matched pairs of one (rank, threshold): where it is among the part's
 * pairs, and where it goes in the output. */
typedef struct {
    int64_t rank, level;
    Py_ssize_t from, size, to;
} PassRun;

/* One part's matched pairs, rank by rank (each rank's by threshold, then prediction):
 * written straight into the output where there is one part (pair NULL); else as each
 * pair's place among the pairs (pair) in runs of one (rank, threshold), merged after. And
 * its scratch. */
typedef struct {
    int64_t *level, *pred, *gt;
    double *iou;
    int64_t *pair;
    PassRun *runs;
    Py_ssize_t n, n_runs;
    const Py_ssize_t *by_rank; /* the part's predictions with pairs, by rank */
    Py_ssize_t n_present;
    HitList run;
    int64_t *own_best;
    Py_ssize_t *t_count;
    int failed;
} PassPart;

/* ranked_pass's matching in parts: each part the predictions of a range of indices whose
 * pairs share no ground truth with another part's (checked), so that each matching state
 * (a ground truth's taken flags) and each prediction's flags are one part's alone. */
typedef struct {
    const Buf *gt, *pred, *rank;
    int has_rank, strict, first, rising, shift;
    int64_t level_mask, p_low;
    const double *v_all, *th, *rth;
    const Py_ssize_t *start, *order, *r_level;
    Py_ssize_t n_t, n_gt, r_sets, r_t, r_per_gt, r_size;
    const u8 *ign, *cr, *r_ign, *r_alike;
    u8 *tk, *r_tk;
    void *r_matched, *r_ignored;
    Out *out;
    int threads;
    PassPart part[VM_MAX_PARTS];
} PassWork;

static void pass_part(void *ctx, int which)
{
    PassWork *w = ctx;
    PassPart *pp = &w->part[which];
    const Buf *gt_b = w->gt, *pred_b = w->pred, *rank_b = w->rank;
    const int has_rank = w->has_rank, strict = w->strict, first = w->first;
    const int rising = w->rising, shift = w->shift;
    const int64_t level_mask = w->level_mask, p_low = w->p_low;
    const double *v_all = w->v_all, *th = w->th, *rth = w->rth;
    const Py_ssize_t *start = w->start, *order = w->order, *r_level = w->r_level;
    const Py_ssize_t *by_rank = pp->by_rank, n_present = pp->n_present;
    const Py_ssize_t n_t = w->n_t, n_gt = w->n_gt, r_sets = w->r_sets, r_t = w->r_t;
    const Py_ssize_t r_per_gt = w->r_per_gt, r_size = w->r_size;
    const u8 *ign = w->ign, *cr = w->cr, *r_ign = w->r_ign, *r_alike = w->r_alike;
    u8 *tk = w->tk, *r_tk = w->r_tk;
    void *r_matched = w->r_matched, *r_ignored = w->r_ignored;
    int64_t *own_best = pp->own_best;
    Py_ssize_t *t_count = pp->t_count;
    HitList *run = &pp->run;
    int failed = 0;
    for (Py_ssize_t q = 0; q < n_present && !failed;) {
        int64_t r = has_rank ? index_at(rank_b, (Py_ssize_t)(by_rank[q] + p_low)) : 0;
        run->n = 0;
        do {
            Py_ssize_t j = by_rank[q], a = start[j], b = start[j + 1];
            int64_t p = j + p_low;
            q++;
            /* The evaluation's own matching, threshold by threshold. A prediction of one
             * pair under rising thresholds (most of them) takes its one ground truth at each
             * threshold its IoU passes where it is free (or a crowd region), as pick does,
             * and stops at the first threshold it fails: it fails every one above. */
            const int one_pair = b - a == 1 && rising;
            const int64_t g_one = one_pair ? index_at(gt_b, order[a]) : -1;
            const double v_one = one_pair ? v_all[order[a]] : 0.0;
            if (hit_reserve(run, n_t) < 0) {
                failed = 1;
                break;
            }
            for (Py_ssize_t t = 0; t < n_t; t++) {
                int best_counts = 0;
                double best_v = 0.0;
                Py_ssize_t best_pair = order[a];
                int64_t best;
                if (one_pair) {
                    if (!passes(v_one, th[t], strict)) {
                        for (; t < n_t; t++)
                            own_best[t] = -1;
                        break;
                    }
                    best = tk[g_one * n_t + t] && !cr[g_one] ? -1 : g_one;
                    best_v = v_one;
                } else {
                    best = pick(order, a, b, v_all, gt_b, th[t], strict, tk + t, n_t, cr, ign,
                                first, &best_counts, &best_v, &best_pair);
                }
                own_best[t] = best;
                if (best < 0)
                    continue;
                tk[best * n_t + t] = 1;
                run->entry[run->n++] = ((int64_t)best_pair << shift) | (int64_t)t;
            }
            if (failed)
                break;
            /* Each area range: the own matching's picks where alike in this image-class
             * (every pair of a prediction lies in its image-class), else its own state. */
            int64_t g_cell = r_sets ? index_at(gt_b, order[a]) : 0;
            /* The own picks at the ranges' thresholds, read once for every set alike here:
             * a set alike takes them all (matched bits), each one's ignored bit its own. */
            int any_alike = 0;
            for (Py_ssize_t s = 0; s < r_sets && !any_alike; s++)
                any_alike = r_alike[s * n_gt + g_cell] != 0;
            int hit_t[64]; /* the ranges' thresholds are at most 64 (ranges_get) */
            int64_t hit_g[64];
            Py_ssize_t n_own_hits = 0;
            uint64_t own_mask = 0;
            int one_gt = 1; /* every pick the same ground truth (hit_g[0]) */
            for (Py_ssize_t t = 0; any_alike && t < r_t; t++) {
                int64_t best = own_best[r_level[t]];
                if (best < 0)
                    continue;
                own_mask |= (uint64_t)1 << t;
                hit_t[n_own_hits] = (int)t;
                hit_g[n_own_hits] = best;
                one_gt &= best == hit_g[0];
                n_own_hits++;
            }
            for (Py_ssize_t s = 0; s < r_sets; s++) {
                const u8 *ign_s = r_ign + s * n_gt;
                Py_ssize_t at = (Py_ssize_t)p * r_sets + s;
                int alike = r_alike[s * n_gt + g_cell];
                if (alike) {
                    if (own_mask == 0)
                        continue;
                    uint64_t ignored_mask = 0;
                    if (one_gt)
                        ignored_mask = ign_s[hit_g[0]] ? own_mask : 0;
                    else
                        for (Py_ssize_t h = 0; h < n_own_hits; h++)
                            ignored_mask |= (uint64_t)(ign_s[hit_g[h]] != 0) << hit_t[h];
                    or_mask(r_matched, r_size, at, own_mask);
                    if (ignored_mask)
                        or_mask(r_ignored, r_size, at, ignored_mask);
                    continue;
                }
                for (Py_ssize_t t = 0; t < r_t; t++) {
                    int best_counts = 0;
                    double best_v = 0.0;
                    Py_ssize_t best_pair = 0;
                    int64_t best = pick(order, a, b, v_all, gt_b, rth[t], strict,
                                        r_tk + s * r_t + t, r_per_gt, cr, ign_s, first,
                                        &best_counts, &best_v, &best_pair);
                    if (best >= 0)
                        r_tk[best * r_per_gt + s * r_t + t] = 1;
                    if (best < 0)
                        continue;
                    or_bit(r_matched, r_size, at, (int)t);
                    if (ign_s[best])
                        or_bit(r_ignored, r_size, at, (int)t);
                }
            }
        } while (q < n_present && has_rank &&
                 index_at(rank_b, (Py_ssize_t)(by_rank[q] + p_low)) == r);
        if (failed || run->n == 0)
            continue;
        /* The rank's pairs by threshold, then prediction (recorded by prediction): a
         * stable counting sort on the threshold. */
        memset(t_count, 0, (size_t)(n_t + 1) * sizeof(Py_ssize_t));
        for (Py_ssize_t h = 0; h < run->n; h++)
            t_count[(run->entry[h] & level_mask) + 1]++;
        for (Py_ssize_t t = 0; t < n_t; t++)
            t_count[t + 1] += t_count[t];
        if (pp->pair) {
            for (Py_ssize_t t = 0; t < n_t; t++)
                if (t_count[t + 1] > t_count[t])
                    pp->runs[pp->n_runs++] = (PassRun){
                        .rank = r, .level = t, .from = pp->n + t_count[t],
                        .size = t_count[t + 1] - t_count[t],
                    };
            for (Py_ssize_t h = 0; h < run->n; h++) {
                const int64_t level = run->entry[h] & level_mask;
                pp->pair[pp->n + t_count[level]++] = run->entry[h] >> shift;
            }
        } else {
            for (Py_ssize_t h = 0; h < run->n; h++) {
                const int64_t level = run->entry[h] & level_mask;
                const Py_ssize_t i = (Py_ssize_t)(run->entry[h] >> shift);
                Py_ssize_t to = pp->n + t_count[level]++;
                pp->level[to] = level;
                pp->pred[to] = index_at(pred_b, i);
                pp->gt[to] = index_at(gt_b, i);
                pp->iou[to] = v_all[i];
            }
        }
        pp->n += run->n;
    }
    pp->failed = failed;
}

/* Boundaries of `parts` ranges of the predictions with pairs ([0, span) offsets from
 * p_low): equal shares of the pairs, each moved on to a prediction that begins an
 * image-class (rank 0); then the number of parts whose pairs share no ground truth with
 * another's (1 where any does: the parts would not be independent). `owner` is scratch of
 * n_gt bytes. */
static int pass_bounds(const PassWork *w, Py_ssize_t span, int parts, Py_ssize_t *bound,
                       signed char *owner)
{
    const Py_ssize_t total = w->start[span];
    bound[0] = 0;
    bound[parts] = span;
    for (int p = 1; p < parts; p++) {
        const Py_ssize_t target = (Py_ssize_t)((double)total * p / parts);
        Py_ssize_t j = bound[p - 1];
        while (j < span && w->start[j] < target)
            j++;
        while (j < span && (w->start[j + 1] == w->start[j] ||
                            index_at(w->rank, (Py_ssize_t)(j + w->p_low)) != 0))
            j++;
        bound[p] = j;
    }
    memset(owner, -1, (size_t)(w->n_gt ? w->n_gt : 1));
    int p = 0;
    for (Py_ssize_t j = 0; j < span; j++) {
        while (j >= bound[p + 1])
            p++;
        for (Py_ssize_t x = w->start[j]; x < w->start[j + 1]; x++) {
            const int64_t g = index_at(w->gt, w->order[x]);
            if (owner[g] < 0)
                owner[g] = (signed char)p;
            else if (owner[g] != p)
                return 1;
        }
    }
    return parts;
}

/* Part p writes its own runs' pairs into the output (each run's place found by
 * pass_merge): the output's fresh pages are touched by every part. */
static void merge_part(void *ctx, int part)
{
    const PassWork *w = ctx;
    const PassPart *pp = &w->part[part];
    Out *out = w->out;
    for (Py_ssize_t k = 0; k < pp->n_runs; k++) {
        const PassRun *run = &pp->runs[k];
        for (Py_ssize_t j = 0; j < run->size; j++) {
            const Py_ssize_t i = (Py_ssize_t)pp->pair[run->from + j], to = run->to + j;
            out->level[to] = run->level;
            out->pred[to] = index_at(w->pred, i);
            out->gt[to] = index_at(w->gt, i);
            out->iou[to] = w->v_all[i];
        }
    }
}

/* The parts' pairs into the output, rank by rank and threshold by threshold, the parts in
 * order within each (each part's predictions before the next part's: index order): each
 * run's place found in turn, then each part's runs written by its own thread. */
static void pass_merge(PassWork *w, int parts)
{
    Py_ssize_t at[VM_MAX_PARTS] = {0};
    Py_ssize_t n = 0;
    for (;;) {
        /* The smallest (rank, threshold) at the parts' heads. */
        int any = 0;
        int64_t r = 0, level = 0;
        for (int p = 0; p < parts; p++) {
            const PassPart *pp = &w->part[p];
            if (at[p] >= pp->n_runs)
                continue;
            const PassRun *run = &pp->runs[at[p]];
            if (!any || run->rank < r || (run->rank == r && run->level < level)) {
                r = run->rank;
                level = run->level;
                any = 1;
            }
        }
        if (!any)
            break;
        for (int p = 0; p < parts; p++) {
            PassPart *pp = &w->part[p];
            if (at[p] >= pp->n_runs)
                continue;
            PassRun *run = &pp->runs[at[p]];
            if (run->rank != r || run->level != level)
                continue;
            run->to = n;
            n += run->size;
            at[p]++;
        }
    }
    vm_run_parts_on(merge_part, w, parts, w->threads);
    w->out->n = n;
}

/* The "unmatched" rule (or "unmatched-first") of ranked pairs in one pass: the evaluation's
 * own matching at its thresholds, its matched pairs returned in the order RankedMatcher.add
 * gives them (rank by rank, predictions of one rank in index order; each rank's pairs by
 * threshold, then prediction), and, where given, every area range at each of its thresholds
 * straight into its flags. Each pair is read once, each prediction's pairs grouped once. */
static PyObject *ranked_pass(PyObject *self, PyObject *args)
{
    PyObject *o_gt, *o_pred, *o_iou, *o_rank, *o_ignore, *o_crowd, *o_thr, *o_taken, *o_ranges;
    int strict, first, threads = 1;
    if (!PyArg_ParseTuple(args, "OOOOOOOppOO|i:ranked_pass", &o_gt, &o_pred, &o_iou, &o_rank,
                          &o_ignore, &o_crowd, &o_thr, &strict, &first, &o_taken, &o_ranges,
                          &threads))
        return NULL;
    Buf gt = {0}, pred = {0}, iou = {0}, rank = {0}, ignore = {0}, crowd = {0}, thr = {0},
        taken = {0};
    Ranges rg = {0};
    int has_rank = o_rank != Py_None, has_ranges = o_ranges != Py_None;
    Py_ssize_t *start = NULL, *order = NULL, *by_rank = NULL, *rank_count = NULL;
    Py_ssize_t *r_level = NULL, *by_part = NULL;
    signed char *owner = NULL;
    u8 *keep = NULL;
    PassWork work = {0};
    int parts = 1;
    Out out = {0};
    PyObject *result = NULL;
    int failed = 0;
    if (get(o_gt, &gt, VM_INDEX, 0, "gt") < 0 || get(o_pred, &pred, VM_INDEX, 0, "pred") < 0 ||
        get(o_iou, &iou, VM_FLOAT64, 0, "iou") < 0 ||
        (has_rank && get(o_rank, &rank, VM_INDEX, 0, "rank") < 0) ||
        get(o_ignore, &ignore, VM_BYTE, 0, "ignore") < 0 ||
        get(o_crowd, &crowd, VM_BYTE, 0, "crowd") < 0 ||
        get(o_thr, &thr, VM_FLOAT64, 0, "thresholds") < 0 ||
        get(o_taken, &taken, VM_BYTE, 1, "taken") < 0)
        goto done;
    Py_ssize_t k = count(&gt), n_gt = count(&ignore), n_t = count(&thr);
    if (count(&pred) != k || count(&iou) != k || count(&crowd) != n_gt ||
        count(&taken) != n_t * n_gt) {
        PyErr_SetString(PyExc_ValueError, "the pairs, ignore, crowd or taken do not fit");
        goto done;
    }
    if (has_ranges && ranges_get(o_ranges, &rg, n_gt, n_t) < 0)
        goto done;
    if (check_indices(&gt, n_gt, "gt") < 0 ||
        (has_rank && check_indices(&pred, count(&rank), "pred") < 0) ||
        (has_ranges && check_indices(&pred, rg.n_pred, "pred") < 0))
        goto done;
    if (!has_rank && !has_ranges) {
        /* Without a ranking, predictions rank in index order: any index >= 0 will do. */
        if (check_indices(&pred, PY_SSIZE_T_MAX / 4, "pred") < 0)
            goto done;
    }
    const double *v_all = iou.view.buf, *th = thr.view.buf;
    const double *rth = has_ranges ? rg.thr.view.buf : NULL;
    /* The pairs that pass the lowest threshold of any state; the others never match. */
    double lowest = 0.0;
    int any_threshold = 0;
    for (Py_ssize_t t = 0; t < n_t; t++)
        if (!any_threshold || th[t] < lowest) {
            lowest = th[t];
            any_threshold = 1;
        }
    for (Py_ssize_t t = 0; has_ranges && rg.n_sets && t < rg.n_t; t++)
        if (!any_threshold || rth[t] < lowest) {
            lowest = rth[t];
            any_threshold = 1;
        }
    /* A found pair's entry: its place among the pairs above `shift` bits of its level. */
    int shift = 0;
    while (((Py_ssize_t)1 << shift) < n_t)
        shift++;
    const int64_t level_mask = ((int64_t)1 << shift) - 1;
    if (shift > 62 || (int64_t)k > (INT64_MAX >> shift)) {
        PyErr_NoMemory();
        goto done;
    }
    /* The own thresholds rise (none NaN): a pair failing one fails those after it. */
    int rising = 1;
    for (Py_ssize_t t = 0; t < n_t; t++)
        if (th[t] != th[t] || (t > 0 && !(th[t] >= th[t - 1])))
            rising = 0;
    /* As numpy's minimum: a NaN threshold of the own matching lets no pair pass. */
    for (Py_ssize_t t = 0; t < n_t; t++)
        if (th[t] != th[t])
            lowest = th[t];
    keep = PyMem_Malloc((size_t)(k ? k : 1));
    if (!keep) {
        PyErr_NoMemory();
        goto done;
    }
    int64_t p_low = 0, p_high = 0;
    KeepWork keeping = {
        .pred = &pred, .v_all = v_all, .lowest = lowest, .any_threshold = any_threshold,
        .strict = strict, .keep = keep, .k = k,
        .parts = vm_fine_parts(threads), .threads = vm_threads(threads),
    };
    if (keep_and_group(&keeping, &p_low, &p_high, &start, &order) < 0)
        goto done;
    /* The predictions with pairs, by rank (stable: index order within a rank); without a
     * ranking, each one a rank of its own, in index order. */
    Py_ssize_t span = (Py_ssize_t)(p_high - p_low), n_present = 0;
    int64_t max_rank = 0;
    for (Py_ssize_t j = 0; j < span; j++) {
        if (start[j + 1] == start[j])
            continue;
        n_present++;
        if (!has_rank)
            continue;
        int64_t r = index_at(&rank, (Py_ssize_t)(j + p_low));
        if (r < 0 || r >= PY_SSIZE_T_MAX / 16) {
            PyErr_Format(PyExc_ValueError, "rank[%lld] = %lld is out of range",
                         (long long)(j + p_low), (long long)r);
            goto done;
        }
        max_rank = r > max_rank ? r : max_rank;
    }
    by_rank = PyMem_Malloc((size_t)(n_present ? n_present : 1) * sizeof(Py_ssize_t));
    if (!by_rank) {
        PyErr_NoMemory();
        goto done;
    }
    /* At most one pair a prediction and threshold. */
    if (n_t && n_present > PY_SSIZE_T_MAX / 8 / n_t) {
        PyErr_NoMemory();
        goto done;
    }
    if (out_new(&out, n_t * n_present) < 0)
        goto done;
    if (has_rank) {
        rank_count = PyMem_Calloc((size_t)max_rank + 2, sizeof(Py_ssize_t));
        if (!rank_count) {
            PyErr_NoMemory();
            goto done;
        }
        for (Py_ssize_t j = 0; j < span; j++)
            if (start[j + 1] > start[j])
                rank_count[index_at(&rank, (Py_ssize_t)(j + p_low)) + 1]++;
        for (int64_t r = 0; r <= max_rank; r++)
            rank_count[r + 1] += rank_count[r];
        for (Py_ssize_t j = 0; j < span; j++)
            if (start[j + 1] > start[j])
                by_rank[rank_count[index_at(&rank, (Py_ssize_t)(j + p_low))]++] = j;
    } else {
        Py_ssize_t q = 0;
        for (Py_ssize_t j = 0; j < span; j++)
            if (start[j + 1] > start[j])
                by_rank[q++] = j;
    }
    const u8 *ign = ignore.view.buf, *cr = crowd.view.buf;
    u8 *tk = taken.view.buf; /* (G, T) */
    const u8 *r_ign = NULL, *r_alike = NULL;
    u8 *r_tk = NULL; /* (G, S, Tr) */
    Py_ssize_t r_sets = 0, r_t = 0, r_per_gt = 0, r_size = 1;
    void *r_matched = NULL, *r_ignored = NULL;
    if (has_ranges) {
        r_level = PyMem_Malloc((size_t)(rg.n_t ? rg.n_t : 1) * sizeof(Py_ssize_t));
        if (!r_level) {
            PyErr_NoMemory();
            goto done;
        }
        /* Read where alike, and checked then (ranges_get). */
        for (Py_ssize_t t = 0; t < rg.n_t; t++)
            r_level[t] = (Py_ssize_t)index_at(&rg.level, t);
        r_ign = rg.ignore.view.buf;
        r_alike = rg.alike.view.buf;
        r_tk = rg.taken.view.buf;
        r_sets = rg.n_sets;
        r_t = rg.n_t;
        r_per_gt = r_sets * r_t;
        r_size = rg.size;
        r_matched = rg.matched.view.buf;
        r_ignored = rg.ignored.view.buf;
    }
    work = (PassWork){
        .gt = &gt, .pred = &pred, .rank = &rank, .has_rank = has_rank, .strict = strict,
        .first = first, .rising = rising, .shift = shift, .level_mask = level_mask,
        .p_low = p_low, .v_all = v_all, .th = th, .rth = rth, .start = start, .order = order,
        .r_level = r_level, .n_t = n_t, .n_gt = n_gt, .r_sets = r_sets, .r_t = r_t,
        .r_per_gt = r_per_gt, .r_size = r_size, .ign = ign, .cr = cr, .r_ign = r_ign,
        .r_alike = r_alike, .tk = tk, .r_tk = r_tk, .r_matched = r_matched,
        .r_ignored = r_ignored, .out = &out, .threads = vm_threads(threads),
    };
    /* In parts only with a ranking (a part begins at an image-class's first prediction)
     * and where the parts share no ground truth. */
    parts = vm_fine_parts(threads);
    if (!has_rank || n_present < 2 * (Py_ssize_t)parts)
        parts = 1;
    Py_ssize_t bound[VM_MAX_PARTS + 1];
    if (parts > 1) {
        owner = PyMem_Malloc((size_t)(n_gt ? n_gt : 1));
        if (!owner) {
            PyErr_NoMemory();
            goto done;
        }
        parts = pass_bounds(&work, span, parts, bound, owner);
    }
    if (parts > 1) {
        /* Each part's predictions in by_rank's order (stable), and its pairs' room. */
        Py_ssize_t part_start[VM_MAX_PARTS + 1] = {0};
        by_part = PyMem_Malloc((size_t)n_present * sizeof *by_part);
        if (!by_part) {
            PyErr_NoMemory();
            goto done;
        }
        for (Py_ssize_t q = 0; q < n_present; q++) {
            int p = 0;
            while (by_rank[q] >= bound[p + 1])
                p++;
            part_start[p + 1]++;
        }
        for (int p = 0; p < parts; p++)
            part_start[p + 1] += part_start[p];
        Py_ssize_t fill[VM_MAX_PARTS];
        memcpy(fill, part_start, sizeof fill);
        for (Py_ssize_t q = 0; q < n_present; q++) {
            int p = 0;
            while (by_rank[q] >= bound[p + 1])
                p++;
            by_part[fill[p]++] = by_rank[q];
        }
        for (int p = 0; p < parts; p++) {
            PassPart *pp = &work.part[p];
            pp->by_rank = by_part + part_start[p];
            pp->n_present = part_start[p + 1] - part_start[p];
            const size_t cap = (size_t)(n_t * pp->n_present > 0 ? n_t * pp->n_present : 1);
            /* Pages touched only as far as they are written. */
            pp->pair = PyMem_Malloc(cap * sizeof(int64_t));
            pp->runs = PyMem_Malloc(cap * sizeof(PassRun));
            if (!pp->pair || !pp->runs) {
                PyErr_NoMemory();
                goto done;
            }
        }
    } else {
        PassPart *pp = &work.part[0];
        pp->by_rank = by_rank;
        pp->n_present = n_present;
        pp->level = out.level;
        pp->pred = out.pred;
        pp->gt = out.gt;
        pp->iou = out.iou;
    }
    for (int p = 0; p < parts; p++) {
        PassPart *pp = &work.part[p];
        pp->own_best = PyMem_Malloc((size_t)(n_t ? n_t : 1) * sizeof(int64_t));
        pp->t_count = PyMem_Malloc((size_t)(n_t + 1) * sizeof(Py_ssize_t));
        /* Room for the part's largest rank's pairs (at most one a prediction and
         * threshold), made here with the GIL: no allocation while the part runs. */
        Py_ssize_t most = 0;
        for (Py_ssize_t q = 0, size = 0; q < pp->n_present; q++) {
            const int same = has_rank && q > 0 &&
                             index_at(&rank, (Py_ssize_t)(pp->by_rank[q] + p_low)) ==
                                 index_at(&rank, (Py_ssize_t)(pp->by_rank[q - 1] + p_low));
            size = same ? size + 1 : 1;
            most = size > most ? size : most;
        }
        if (!pp->own_best || !pp->t_count || hit_reserve(&pp->run, most * n_t) < 0) {
            PyErr_NoMemory();
            goto done;
        }
    }
    Py_BEGIN_ALLOW_THREADS
    vm_run_parts_on(pass_part, &work, parts, work.threads);
    for (int p = 0; p < parts; p++)
        failed |= work.part[p].failed;
    if (!failed && parts > 1)
        pass_merge(&work, parts);
    else
        out.n = work.part[0].n;
    Py_END_ALLOW_THREADS
    if (failed) {
        PyErr_NoMemory();
        goto done;
    }
    result = out_value(&out);
done:
    out_free(&out);
    for (int p = 0; p < VM_MAX_PARTS; p++) {
        PassPart *pp = &work.part[p];
        hit_free(&pp->run);
        PyMem_Free(pp->own_best);
        PyMem_Free(pp->t_count);
        PyMem_Free(pp->pair);
        PyMem_Free(pp->runs);
    }
    PyMem_Free(by_part);
    PyMem_Free(owner);
    PyMem_Free(start);
    PyMem_Free(order);
    PyMem_Free(by_rank);
    PyMem_Free(rank_count);
    PyMem_Free(keep);
    PyMem_Free(r_level);
    release(&gt);
    release(&pred);
    release(&iou);
    release(&rank);
    release(&ignore);
    release(&crowd);
    release(&thr);
    release(&taken);
    ranges_release(&rg);
    return result;
}

/* --- devkit_flags ---------------------------------------------------------------------- */

static PyObject *devkit_flags(PyObject *self, PyObject *args)
{
    PyObject *o_best_gt, *o_best_iou, *o_ignore, *o_thr, *o_matched, *o_ignored;
    int strict;
    if (!PyArg_ParseTuple(args, "OOOOpOO:devkit_flags", &o_best_gt, &o_best_iou, &o_ignore,
                          &o_thr, &strict, &o_matched, &o_ignored))
        return NULL;
    Buf best_gt = {0}, best_iou = {0}, ignore = {0}, thr = {0}, matched = {0}, ignored = {0};
    u8 *taken = NULL;
    PyObject *result = NULL;
    if (get(o_best_gt, &best_gt, VM_INDEX, 0, "best_gt") < 0 ||
        get(o_best_iou, &best_iou, VM_FLOAT64, 0, "best_iou") < 0 ||
        get(o_ignore, &ignore, VM_BYTE, 0, "ignore") < 0 ||
        get(o_thr, &thr, VM_FLOAT64, 0, "thresholds") < 0 ||
        get(o_matched, &matched, VM_INTEGER, 1, "matched") < 0 ||
        get(o_ignored, &ignored, VM_INTEGER, 1, "ignored") < 0)
        goto done;
    Py_ssize_t n_pred = count(&best_gt), n_t = count(&thr), size = matched.view.itemsize;
    Py_ssize_t n_sets = n_pred ? count(&matched) / n_pred : 0;
    if (count(&best_iou) != n_pred || n_t > 8 * size || ignored.view.itemsize != size ||
        ignored.view.len != matched.view.len || count(&matched) != n_sets * n_pred) {
        PyErr_SetString(PyExc_ValueError, "best_gt, best_iou, matched or ignored do not fit");
        goto done;
    }
    if (n_pred == 0 || n_sets == 0) {
        Py_INCREF(Py_None);
    result = Py_None;
        goto done;
    }
    if (count(&ignore) % n_sets != 0) {
        PyErr_SetString(PyExc_ValueError, "ignore is not (S, G)");
        goto done;
    }
    Py_ssize_t n_gt = count(&ignore) / n_sets;
    for (Py_ssize_t p = 0; p < n_pred; p++) {
        int64_t g = index_at(&best_gt, p);
        if (g < -1 || g >= n_gt) {
            PyErr_Format(PyExc_ValueError, "best_gt[%zd] = %lld is out of range", p,
                         (long long)g);
            goto done;
        }
    }
    taken = PyMem_Calloc((size_t)(n_gt * n_sets * n_t) + 1, 1);
    if (!taken) {
        PyErr_NoMemory();
        goto done;
    }
    const u8 *ign = ignore.view.buf;
    const double *v_all = best_iou.view.buf, *th = thr.view.buf;
    Py_ssize_t per_gt = n_sets * n_t;
    Py_BEGIN_ALLOW_THREADS
    /* Predictions in index order: within an image-class, their ranking order. */
    for (Py_ssize_t p = 0; p < n_pred; p++) {
        int64_t g = index_at(&best_gt, p);
        if (g < 0)
            continue;
        double v = v_all[p];
        for (Py_ssize_t s = 0; s < n_sets; s++) {
            int on_ignored = ign[s * n_gt + g];
            for (Py_ssize_t t = 0; t < n_t; t++) {
                if (!passes(v, th[t], strict))
                    continue;
                if (on_ignored) {
                    or_bit(matched.view.buf, size, p * n_sets + s, (int)t);
                    or_bit(ignored.view.buf, size, p * n_sets + s, (int)t);
                    continue;
                }
                u8 *at = taken + g * per_gt + s * n_t + t;
                if (*at)
                    continue;
                *at = 1;
                or_bit(matched.view.buf, size, p * n_sets + s, (int)t);
            }
        }
    }
    Py_END_ALLOW_THREADS
    Py_INCREF(Py_None);
    result = Py_None;
done:
    PyMem_Free(taken);
    release(&best_gt);
    release(&best_iou);
    release(&ignore);
    release(&thr);
    release(&matched);
    release(&ignored);
    return result;
}

/* --- devkit_hits ----------------------------------------------------------------------- */

/* The devkit rule's matched pairs under one ground-truth set, in match_devkit's order: at
 * each threshold, the predictions on ignored ground truth (in index order), then each
 * counting ground truth's first prediction by rank (ties: the lower index), by ground
 * truth. */
static PyObject *devkit_hits(PyObject *self, PyObject *args)
{
    PyObject *o_best_gt, *o_best_iou, *o_rank, *o_ignore, *o_thr;
    int strict;
    if (!PyArg_ParseTuple(args, "OOOOOp:devkit_hits", &o_best_gt, &o_best_iou, &o_rank,
                          &o_ignore, &o_thr, &strict))
        return NULL;
    Buf best_gt = {0}, best_iou = {0}, rank = {0}, ignore = {0}, thr = {0};
    Py_ssize_t *cand = NULL, *by_gt = NULL, *gt_start = NULL;
    Out out = {0};
    PyObject *result = NULL;
    if (get(o_best_gt, &best_gt, VM_INDEX, 0, "best_gt") < 0 ||
        get(o_best_iou, &best_iou, VM_FLOAT64, 0, "best_iou") < 0 ||
        get(o_rank, &rank, VM_INDEX, 0, "rank") < 0 ||
        get(o_ignore, &ignore, VM_BYTE, 0, "ignore") < 0 ||
        get(o_thr, &thr, VM_FLOAT64, 0, "thresholds") < 0)
        goto done;
    Py_ssize_t n_pred = count(&best_gt), n_gt = count(&ignore), n_t = count(&thr);
    if (count(&best_iou) != n_pred || count(&rank) != n_pred) {
        PyErr_SetString(PyExc_ValueError, "best_gt, best_iou and rank differ in length");
        goto done;
    }
    for (Py_ssize_t p = 0; p < n_pred; p++) {
        int64_t g = index_at(&best_gt, p);
        if (g < -1 || g >= n_gt) {
            PyErr_Format(PyExc_ValueError, "best_gt[%zd] = %lld is out of range", p,
                         (long long)g);
            goto done;
        }
    }
    /* At most one pair a prediction and threshold. */
    if (n_t && n_pred > PY_SSIZE_T_MAX / 8 / n_t) {
        PyErr_NoMemory();
        goto done;
    }
    cand = PyMem_Malloc((size_t)(n_pred ? n_pred : 1) * sizeof(Py_ssize_t));
    by_gt = PyMem_Malloc((size_t)(n_pred ? n_pred : 1) * sizeof(Py_ssize_t));
    gt_start = PyMem_Calloc((size_t)n_gt + 1, sizeof(Py_ssize_t));
    if (!cand || !by_gt || !gt_start) {
        PyErr_NoMemory();
        goto done;
    }
    if (out_new(&out, n_t * n_pred) < 0)
        goto done;
    const u8 *ign = ignore.view.buf;
    const double *v_all = best_iou.view.buf, *th = thr.view.buf;
    Py_BEGIN_ALLOW_THREADS
    /* The predictions whose best ground truth passes the lowest threshold (a NaN one
     * passes none), in index order; the ones on counting ground truth also grouped by
     * ground truth (stable: index order within each). */
    double lowest = 0.0;
    int any_threshold = 0;
    for (Py_ssize_t t = 0; t < n_t; t++)
        if (th[t] == th[t] && (!any_threshold || th[t] < lowest)) {
            lowest = th[t];
            any_threshold = 1;
        }
    Py_ssize_t n_cand = 0;
    for (Py_ssize_t p = 0; p < n_pred && any_threshold; p++) {
        int64_t g = index_at(&best_gt, p);
        if (g < 0 || !passes(v_all[p], lowest, strict))
            continue;
        cand[n_cand++] = p;
        if (!ign[g])
            gt_start[g + 1]++;
    }
    for (Py_ssize_t g = 0; g < n_gt; g++)
        gt_start[g + 1] += gt_start[g];
    Py_ssize_t n_counting = n_gt ? gt_start[n_gt] : 0;
    for (Py_ssize_t c = 0; c < n_cand; c++) {
        int64_t g = index_at(&best_gt, cand[c]);
        if (!ign[g])
            by_gt[gt_start[g]++] = cand[c];
    }
    for (Py_ssize_t t = 0; t < n_t; t++) {
        /* Predictions on ignored ground truth: each one matched, in index order. */
        for (Py_ssize_t c = 0; c < n_cand; c++) {
            Py_ssize_t p = cand[c];
            int64_t g = index_at(&best_gt, p);
            if (!ign[g] || !passes(v_all[p], th[t], strict))
                continue;
            out.level[out.n] = t;
            out.pred[out.n] = p;
            out.gt[out.n] = g;
            out.iou[out.n] = v_all[p];
            out.n++;
        }
        /* Each counting ground truth to its first prediction by rank, by ground truth. */
        for (Py_ssize_t q = 0; q < n_counting;) {
            int64_t g = index_at(&best_gt, by_gt[q]);
            Py_ssize_t best = -1;
            for (; q < n_counting && index_at(&best_gt, by_gt[q]) == g; q++) {
                Py_ssize_t p = by_gt[q];
                if (!passes(v_all[p], th[t], strict))
                    continue;
                if (best < 0 || index_at(&rank, p) < index_at(&rank, best))
                    best = p;
            }
            if (best < 0)
                continue;
            out.level[out.n] = t;
            out.pred[out.n] = best;
            out.gt[out.n] = g;
            out.iou[out.n] = v_all[best];
            out.n++;
        }
    }
    Py_END_ALLOW_THREADS
    result = out_value(&out);
done:
    out_free(&out);
    PyMem_Free(cand);
    PyMem_Free(by_gt);
    PyMem_Free(gt_start);
    release(&best_gt);
    release(&best_iou);
    release(&rank);
    release(&ignore);
    release(&thr);
    return result;
}

/* --- score_cell_order ------------------------------------------------------------------ */

/* Stable LSD radix sort of (key, value) pairs on the key's low `bits` bits, 16 at a time;
 * a pass where every key has the same digit is skipped. Returns the buffers holding the
 * result (either the inputs or the spare ones). */
static void radix_pairs(uint64_t **key, int64_t **value, uint64_t **key2, int64_t **value2,
                        Py_ssize_t n, int bits, Py_ssize_t *hist)
{
    /* Every pass's histogram in one reading of the keys (at most 4 passes of 16 bits). */
    const int passes = (bits + 15) / 16;
    memset(hist, 0, sizeof(Py_ssize_t) * 65537 * (size_t)passes);
    {
        const uint64_t *k = *key;
        for (Py_ssize_t i = 0; i < n; i++) {
            const uint64_t x = k[i];
            for (int p = 0; p < passes; p++)
                hist[65537 * p + ((x >> (16 * p)) & 0xFFFF) + 1]++;
        }
    }
    for (int p = 0; p < passes; p++) {
        const int shift = 16 * p;
        Py_ssize_t *h = hist + 65537 * p;
        uint64_t *k = *key, *k2 = *key2;
        int64_t *v = *value, *v2 = *value2;
        int single = 0;
        for (int d = 1; d <= 65536; d++) {
            if (h[d] == n)
                single = 1;
            h[d] += h[d - 1];
        }
        if (single)
            continue;
        for (Py_ssize_t i = 0; i < n; i++) {
            Py_ssize_t at = h[(k[i] >> shift) & 0xFFFF]++;
            k2[at] = k[i];
            v2[at] = v[i];
        }
        *key = k2;
        *key2 = k;
        *value = v2;
        *value2 = v;
    }
}

/* A float64's bits as an unsigned key in the same order (no NaN; -0.0 as 0.0). */
static inline uint64_t float_key(double x)
{
    uint64_t u;
    if (x == 0.0)
        x = 0.0;
    memcpy(&u, &x, sizeof u);
    return (u >> 63) ? ~u : (u | ((uint64_t)1 << 63));
}

/* Unique words w[0..n) that agree above bit `top`, sorted: insertion for a few, else a
 * counting pass on the 8 bits below `top` (through `tmp`, room for n words) and each part
 * sorted the same way on the bits below those. */
static void sort_words(uint64_t *w, Py_ssize_t n, int top, uint64_t *tmp)
{
    if (n <= 48 || top <= 0) {
        for (Py_ssize_t i = 1; i < n; i++) {
            const uint64_t x = w[i];
            Py_ssize_t j = i;
            for (; j > 0 && w[j - 1] > x; j--)
                w[j] = w[j - 1];
            w[j] = x;
        }
        return;
    }
    const int shift = top > 8 ? top - 8 : 0;
    Py_ssize_t at[257] = {0};
    for (Py_ssize_t i = 0; i < n; i++)
        at[((w[i] >> shift) & 0xFF) + 1]++;
    for (int d = 1; d <= 256; d++)
        at[d] += at[d - 1];
    for (Py_ssize_t i = 0; i < n; i++)
        tmp[at[(w[i] >> shift) & 0xFF]++] = w[i];
    memcpy(w, tmp, (size_t)n * sizeof *w);
    Py_ssize_t start = 0;
    for (int d = 0; d < 256; d++) {
        sort_words(w + start, at[d] - start, shift, tmp);
        start = at[d];
    }
}

/* score_cell_order's work in parts (OrderWork): the stable order by descending score into
 * out (n indices), where the bits in which the scores' keys differ (key_bits: the keys less
 * the smallest, kmin) less the top 16, and an index's bits (index_bits), fit 64 together.
 * One stable counting pass on those top 16 bits puts each prediction's rest of key and
 * index, packed in one word, into its bucket; words are unique and in (key, index) order,
 * so sorting each bucket's words (sort_words) gives the stable order, and the index is the
 * word's low bits. Then, where the cells fit a counting table, the order by cell: one
 * stable counting pass over the score order.
 *
 * In parts: part p counts the digits (cells) of its range of the input in its own table;
 * the tables' prefix sums, digit by digit and part by part, give each part the places of
 * its elements, which follow those of the parts before it in each bucket (a stable pass:
 * the same places as one part's). Each part then sorts the buckets that start in its range
 * of places (through `tmp` from the first one's start: buckets are disjoint) and unpacks its
 * range of words. Each step writes places no other part writes; steps are apart (every part
 * ends one before the next begins). One part is the single-thread pass. */
typedef struct {
    const double *sc;
    const Buf *cell;
    Py_ssize_t n;
    int parts, step;
    uint64_t kmin;
    int shift, index_bits;
    Py_ssize_t *hist;   /* (parts, 65537) counts, then places; then 65537 bucket starts */
    Py_ssize_t *cells;  /* (parts, n_cells + 1) likewise, for the order by cell */
    Py_ssize_t n_cells; /* cell_max + 1 */
    uint64_t *tmp;
    int64_t *out_score, *out_order;
} OrderWork;

enum { ORDER_COUNT, ORDER_SCATTER, ORDER_SORT, ORDER_UNPACK, CELL_COUNT, CELL_SCATTER };

static inline uint64_t order_key(const OrderWork *w, Py_ssize_t i)
{
    return ~float_key(w->sc[i]) - w->kmin;
}

/* Bucket starts of the last table (hist + parts * 65537): the places' start of digit d,
 * and n at 65536. */
static inline Py_ssize_t *order_starts(const OrderWork *w) { return w->hist + 65537 * w->parts; }

static void order_part(void *ctx, int part)
{
    OrderWork *w = ctx;
    const Py_ssize_t lo = vm_part_start(w->n, part, w->parts);
    const Py_ssize_t hi = vm_part_start(w->n, part + 1, w->parts);
    Py_ssize_t *h = w->hist + 65537 * part;
    uint64_t *word = (uint64_t *)w->out_score;
    switch (w->step) {
    case ORDER_COUNT:
        memset(h, 0, sizeof(Py_ssize_t) * 65537);
        for (Py_ssize_t i = lo; i < hi; i++)
            h[order_key(w, i) >> w->shift]++;
        break;
    case ORDER_SCATTER: {
        const uint64_t rest = ((uint64_t)1 << w->shift) - 1;
        for (Py_ssize_t i = lo; i < hi; i++) {
            const uint64_t key = order_key(w, i);
            word[h[key >> w->shift]++] = ((key & rest) << w->index_bits) | (uint64_t)i;
        }
        break;
    }
    case ORDER_SORT: {
        if (w->shift == 0)
            break;
        const Py_ssize_t *start = order_starts(w);
        int d = 0;
        while (d < 65536 && start[d] < lo)
            d++;
        uint64_t *tmp = w->tmp + start[d];
        for (; d < 65536 && start[d] < hi; d++)
            sort_words(word + start[d], start[d + 1] - start[d], w->shift + w->index_bits, tmp);
        break;
    }
    case ORDER_UNPACK: {
        const uint64_t mask = w->index_bits ? (~(uint64_t)0 >> (64 - w->index_bits)) : 0;
        for (Py_ssize_t i = lo; i < hi; i++)
            w->out_score[i] = (int64_t)(word[i] & mask);
        break;
    }
    case CELL_COUNT: {
        Py_ssize_t *c = w->cells + (w->n_cells + 1) * part;
        memset(c, 0, sizeof(Py_ssize_t) * (size_t)(w->n_cells + 1));
        for (Py_ssize_t i = lo; i < hi; i++)
            c[index_at(w->cell, (Py_ssize_t)w->out_score[i])]++;
        break;
    }
    case CELL_SCATTER: {
        Py_ssize_t *c = w->cells + (w->n_cells + 1) * part;
        for (Py_ssize_t i = lo; i < hi; i++) {
            const int64_t j = w->out_score[i];
            w->out_order[c[index_at(w->cell, (Py_ssize_t)j)]++] = j;
        }
        break;
    }
    }
}

/* Each part's counts of `digits` digits in `table` (rows of `row` entries) turned into the
 * places of its first element of each digit; with `starts`, each digit's first place too
 * (and n after the last). */
static void order_places(Py_ssize_t *table, Py_ssize_t row, Py_ssize_t digits, int parts,
                         Py_ssize_t *starts)
{
    Py_ssize_t at = 0;
    for (Py_ssize_t d = 0; d < digits; d++) {
        if (starts)
            starts[d] = at;
        for (int p = 0; p < parts; p++) {
            const Py_ssize_t c = table[row * p + d];
            table[row * p + d] = at;
            at += c;
        }
    }
    if (starts)
        starts[digits] = at;
}

static void order_step(OrderWork *w, int step)
{
    w->step = step;
    vm_run_parts(order_part, w, w->parts);
}

/* The packed score order, then (use_counts) the order by cell, in w->parts parts. */
static void score_order_parts(OrderWork *w, int use_counts, int packed)
{
    if (packed) {
        order_step(w, ORDER_COUNT);
        order_places(w->hist, 65537, 65536, w->parts, order_starts(w));
        order_step(w, ORDER_SCATTER);
        order_step(w, ORDER_SORT);
        order_step(w, ORDER_UNPACK);
    }
    if (use_counts) {
        order_step(w, CELL_COUNT);
        order_places(w->cells, w->n_cells + 1, w->n_cells, w->parts, NULL);
        order_step(w, CELL_SCATTER);
    }
}

static PyObject *score_cell_order(PyObject *self, PyObject *args)
{
    PyObject *o_score, *o_cell, *o_by_score, *o_order;
    int threads = 1;
    if (!PyArg_ParseTuple(args, "OOOO|i:score_cell_order", &o_score, &o_cell, &o_by_score,
                          &o_order, &threads))
        return NULL;
    Buf score = {0}, cell = {0}, by_score = {0}, order = {0};
    uint64_t *k = NULL, *k2 = NULL;
    int64_t *v = NULL, *v2 = NULL;
    Py_ssize_t *hist = NULL, *cell_counts = NULL;
    PyObject *result = NULL;
    if (get(o_score, &score, VM_FLOAT64, 0, "score") < 0 ||
        get(o_cell, &cell, VM_INDEX, 0, "cell") < 0 ||
        get(o_by_score, &by_score, VM_INT64, 1, "by_score") < 0 ||
        get(o_order, &order, VM_INT64, 1, "order") < 0)
        goto done;
    Py_ssize_t n = count(&score);
    if (count(&cell) != n || count(&by_score) != n || count(&order) != n) {
        PyErr_SetString(PyExc_ValueError, "score, cell, by_score and order do not fit");
        goto done;
    }
    const double *sc = score.view.buf;
    uint64_t cell_max = 0, kmin = UINT64_MAX, kmax = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (sc[i] != sc[i]) {
            PyErr_Format(PyExc_ValueError, "score[%zd] is NaN", i);
            goto done;
        }
        const uint64_t key = ~float_key(sc[i]);
        kmin = key < kmin ? key : kmin;
        kmax = key > kmax ? key : kmax;
        int64_t c = index_at(&cell, i);
        if (c < 0) {
            PyErr_Format(PyExc_ValueError, "cell[%zd] = %lld is negative", i, (long long)c);
            goto done;
        }
        cell_max = (uint64_t)c > cell_max ? (uint64_t)c : cell_max;
    }
    /* The score order needs only a 16-bit digit's counts (a table a part, and the buckets'
     * starts) and a buffer touched as far as its largest bucket where a key's rest and an
     * index fit one word (else radix passes over every key bit, in one part); the order by
     * cell a counting table a part where the cells fit one no larger than the predictions'
     * (else radix passes, in one part). Radix passes need key and value buffers: fresh
     * pages, touched at the first call. */
    size_t m = (size_t)(n ? n : 1);
    int key_bits = 0, index_bits = 0, cell_bits = 0;
    while (key_bits < 64 && ((kmax - kmin) >> key_bits))
        key_bits++;
    while (index_bits < 64 && ((uint64_t)(n ? n - 1 : 0) >> index_bits))
        index_bits++;
    while (cell_bits < 64 && (cell_max >> cell_bits))
        cell_bits++;
    const int packed = (key_bits > 16 ? key_bits - 16 : 0) + index_bits <= 64;
    const int use_counts = cell_bits > 16 && cell_max < (uint64_t)n;
    int parts = vm_threads(threads); /* one a thread: each part clears tables of its own */
    if ((Py_ssize_t)parts > n)
        parts = n > 0 ? (int)n : 1;
    hist = PyMem_Malloc((size_t)(parts + 1 > 4 ? parts + 1 : 4) * 65537 * sizeof *hist);
    if (use_counts)
        cell_counts = PyMem_Malloc((size_t)parts * ((size_t)cell_max + 2) * sizeof *cell_counts);
    k = PyMem_Malloc(m * sizeof *k);
    if (!packed || !use_counts) {
        k2 = PyMem_Malloc(m * sizeof *k2);
        v = PyMem_Malloc(m * sizeof *v);
        v2 = PyMem_Malloc(m * sizeof *v2);
    }
    if (!hist || !k || (use_counts && !cell_counts) ||
        ((!packed || !use_counts) && (!k2 || !v || !v2))) {
        PyErr_NoMemory();
        goto done;
    }
    int64_t *out_score = by_score.view.buf, *out_order = order.view.buf;
    OrderWork work = {
        .sc = sc, .cell = &cell, .n = n, .parts = parts, .kmin = kmin,
        .shift = key_bits > 16 ? key_bits - 16 : 0, .index_bits = index_bits, .hist = hist,
        .cells = cell_counts, .n_cells = (Py_ssize_t)cell_max + 1, .tmp = k,
        .out_score = out_score, .out_order = out_order,
    };
    Py_BEGIN_ALLOW_THREADS
    /* Descending score, ties in index order; then by cell, stable: cell, descending score,
     * index (in one counting pass where the cells fit a table no larger than the
     * predictions', else radix passes). */
    if (packed) {
        score_order_parts(&work, 0, 1);
    } else {
        for (Py_ssize_t i = 0; i < n; i++) {
            k[i] = ~float_key(sc[i]);
            v[i] = i;
        }
        radix_pairs(&k, &v, &k2, &v2, n, 64, hist);
        memcpy(out_score, v, (size_t)n * sizeof *v);
    }
    if (use_counts) {
        score_order_parts(&work, 1, 0);
    } else {
        if (packed)
            memcpy(v, out_score, (size_t)n * sizeof *v);
        for (Py_ssize_t i = 0; i < n; i++)
            k[i] = (uint64_t)index_at(&cell, (Py_ssize_t)v[i]);
        radix_pairs(&k, &v, &k2, &v2, n, cell_bits, hist);
        memcpy(out_order, v, (size_t)n * sizeof *v);
    }
    Py_END_ALLOW_THREADS
    Py_INCREF(Py_None);
    result = Py_None;
done:
    PyMem_Free(k);
    PyMem_Free(k2);
    PyMem_Free(v);
    PyMem_Free(v2);
    PyMem_Free(hist);
    PyMem_Free(cell_counts);
    release(&score);
    release(&cell);
    release(&by_score);
    release(&order);
    return result;
}

/* --- hit_counts, image_counts ------------------------------------------------------- */

/* Each image's matched pairs at each threshold, from the pairs (level, pred, gt): into
 * every_hit[level, image of pred] each pair; into counting[level, image of pred] each pair
 * whose ground truth is not ignored. With `passing` (or None), only the pairs of passing
 * predictions. Both outputs (T, I) int64, added to. */
static PyObject *hit_counts(PyObject *self, PyObject *args)
{
    PyObject *o_level, *o_pred, *o_gt, *o_image, *o_ignore, *o_passing, *o_counting, *o_every;
    if (!PyArg_ParseTuple(args, "OOOOOOOO:hit_counts", &o_level, &o_pred, &o_gt, &o_image,
                          &o_ignore, &o_passing, &o_counting, &o_every))
        return NULL;
    Buf level = {0}, pred = {0}, gt = {0}, image = {0}, ignore = {0}, passing = {0};
    Buf counting = {0}, every = {0};
    PyObject *result = NULL;
    if (get(o_level, &level, VM_INDEX, 0, "level") < 0 ||
        get(o_pred, &pred, VM_INDEX, 0, "pred") < 0 || get(o_gt, &gt, VM_INDEX, 0, "gt") < 0 ||
        get(o_image, &image, VM_INDEX, 0, "image") < 0 ||
        get(o_ignore, &ignore, VM_BYTE, 0, "ignore") < 0 ||
        (o_passing != Py_None && get(o_passing, &passing, VM_BYTE, 0, "passing") < 0) ||
        get(o_counting, &counting, VM_INT64, 1, "counting") < 0 ||
        get(o_every, &every, VM_INT64, 1, "every") < 0)
        goto done;
    Py_ssize_t n = count(&level), n_pred = count(&image);
    if (count(&pred) != n || count(&gt) != n) {
        PyErr_SetString(PyExc_ValueError, "level, pred and gt differ in length");
        goto done;
    }
    if (counting.view.ndim != 2 || counting.view.len != every.view.len ||
        (passing.held && count(&passing) != n_pred)) {
        PyErr_SetString(PyExc_ValueError, "counting, every or passing do not fit");
        goto done;
    }
    Py_ssize_t n_t = counting.view.shape[0], n_images = counting.view.shape[1];
    if (check_indices(&level, n_t, "level") < 0 || check_indices(&pred, n_pred, "pred") < 0 ||
        check_indices(&gt, count(&ignore), "gt") < 0 ||
        check_indices(&image, n_images, "image") < 0)
        goto done;
    const u8 *ign = ignore.view.buf, *pass = passing.held ? passing.view.buf : NULL;
    int64_t *tp = counting.view.buf, *all = every.view.buf;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t p = index_at(&pred, i);
        if (pass && !pass[p])
            continue;
        Py_ssize_t at = (Py_ssize_t)index_at(&level, i) * n_images +
                        (Py_ssize_t)index_at(&image, (Py_ssize_t)p);
        all[at]++;
        if (!ign[index_at(&gt, i)])
            tp[at]++;
    }
    Py_END_ALLOW_THREADS
    Py_INCREF(Py_None);
    result = Py_None;
done:
    release(&level);
    release(&pred);
    release(&gt);
    release(&image);
    release(&ignore);
    release(&passing);
    release(&counting);
    release(&every);
    return result;
}

/* Each row's set flags counted by image: out[t, image[g]] += 1 for each g with
 * flags[t, g] (flags (T, G) bytes, out (T, I) int64, added to). */
static PyObject *image_counts(PyObject *self, PyObject *args)
{
    PyObject *o_flags, *o_image, *o_out;
    if (!PyArg_ParseTuple(args, "OOO:image_counts", &o_flags, &o_image, &o_out))
        return NULL;
    Buf flags = {0}, image = {0}, out = {0};
    PyObject *result = NULL;
    if (get(o_flags, &flags, VM_BYTE, 0, "flags") < 0 ||
        get(o_image, &image, VM_INDEX, 0, "image") < 0 ||
        get(o_out, &out, VM_INT64, 1, "out") < 0)
        goto done;
    Py_ssize_t n_gt = count(&image);
    if (out.view.ndim != 2 || count(&flags) != out.view.shape[0] * n_gt) {
        PyErr_SetString(PyExc_ValueError, "flags, image and out do not fit");
        goto done;
    }
    Py_ssize_t n_t = out.view.shape[0], n_images = out.view.shape[1];
    if (check_indices(&image, n_images, "image") < 0)
        goto done;
    const u8 *f = flags.view.buf;
    int64_t *o = out.view.buf;
    Py_BEGIN_ALLOW_THREADS
    /* Each g's image read once; its T flags, one per row, summed into its image's cells. */
    for (Py_ssize_t g = 0; g < n_gt; g++) {
        int64_t *counts = o + index_at(&image, g);
        for (Py_ssize_t t = 0; t < n_t; t++)
            counts[t * n_images] += f[t * n_gt + g] != 0;
    }
    Py_END_ALLOW_THREADS
    Py_INCREF(Py_None);
    result = Py_None;
done:
    release(&flags);
    release(&image);
    release(&out);
    return result;
}

/* --- alike_cells ----------------------------------------------------------------------- */

/* The most sets alike_cells takes: each ground truth's code holds 1 + 2 * S bits. */
#define ALIKE_MAX_SETS 15

/* Where each of S ground-truth sets (ignore, (S, G)) is matched as the own set (own, (G,))
 * in the image-class of each ground truth (cell, (G,) int64, non-decreasing: each run of
 * equal cells is an image-class; the caller checks the order): the two ignore the same
 * ground truth there, or each ignores all or none of it. Into alike (S, G).
 *
 * Image-classes hold a few ground truth each, so the runs are walked without a branch per
 * run: each ground truth's code (bit 0 own, bit 1 + s ignored by set s, bit 1 + S + s the
 * two differ) is OR-ed and AND-ed along its run going forward, and the run's answer, read
 * at its last ground truth, is handed back along the run going backward. */
static PyObject *alike_cells(PyObject *self, PyObject *args)
{
    PyObject *o_ignore, *o_own, *o_cell, *o_alike;
    if (!PyArg_ParseTuple(args, "OOOO:alike_cells", &o_ignore, &o_own, &o_cell, &o_alike))
        return NULL;
    Buf ignore = {0}, own = {0}, cell = {0}, alike = {0};
    uint32_t *any = NULL, *all = NULL;
    PyObject *result = NULL;
    if (get(o_ignore, &ignore, VM_BYTE, 0, "ignore") < 0 ||
        get(o_own, &own, VM_BYTE, 0, "own") < 0 || get(o_cell, &cell, VM_INT64, 0, "cell") < 0 ||
        get(o_alike, &alike, VM_BYTE, 1, "alike") < 0)
        goto done;
    const Py_ssize_t n_gt = count(&own);
    if (count(&cell) != n_gt || n_gt == 0 || count(&ignore) % n_gt != 0 ||
        count(&alike) != count(&ignore) || count(&ignore) / n_gt > ALIKE_MAX_SETS) {
        PyErr_SetString(PyExc_ValueError, "ignore, own, cell and alike do not fit");
        goto done;
    }
    const int n_sets = (int)(count(&ignore) / n_gt);
    any = PyMem_Malloc((size_t)n_gt * sizeof *any);
    all = PyMem_Malloc((size_t)n_gt * sizeof *all);
    if (!any || !all) {
        PyErr_NoMemory();
        goto done;
    }
    const u8 *ign = ignore.view.buf, *mine = own.view.buf;
    const int64_t *cells = cell.view.buf;
    u8 *out = alike.view.buf;
    Py_BEGIN_ALLOW_THREADS
    uint32_t or_run = 0, and_run = 0;
    for (Py_ssize_t g = 0; g < n_gt; g++) {
        const int start = g == 0 || cells[g] != cells[g - 1];
        if (start && (g == n_gt - 1 || cells[g + 1] != cells[g]))
            continue; /* an image-class of one ground truth: the backward pass's */
        const uint32_t m = mine[g] != 0;
        uint32_t code = m;
        for (int s = 0; s < n_sets; s++) {
            const uint32_t x = ign[s * n_gt + g] != 0;
            code |= x << (1 + s) | (x ^ m) << (1 + n_sets + s);
        }
        or_run = start ? code : (or_run | code);
        and_run = start ? code : (and_run & code);
        any[g] = or_run;
        all[g] = and_run;
    }
    uint32_t answer = 0; /* bit s: set s is alike in the run */
    for (Py_ssize_t g = n_gt - 1; g >= 0; g--) {
        const int end = g == n_gt - 1 || cells[g + 1] != cells[g];
        if (end && (g == 0 || cells[g] != cells[g - 1])) {
            /* One ground truth: every set ignores all or none of it, and so does the own
             * set, so every set is alike there. */
            for (int s = 0; s < n_sets; s++)
                out[s * n_gt + g] = 1;
            continue;
        }
        const uint32_t o = any[g], a = all[g];
        const uint32_t own_uniform = ((o & 1) == 0) | (a & 1);
        uint32_t here = 0;
        for (int s = 0; s < n_sets; s++) {
            const uint32_t none = !((o >> (1 + s)) & 1), every = (a >> (1 + s)) & 1;
            const uint32_t differs = (o >> (1 + n_sets + s)) & 1;
            here |= ((differs == 0) | ((none | every) & own_uniform)) << s;
        }
        answer = end ? here : answer;
        for (int s = 0; s < n_sets; s++)
            out[s * n_gt + g] = (u8)((answer >> s) & 1);
    }
    Py_END_ALLOW_THREADS
    Py_INCREF(Py_None);
    result = Py_None;
done:
    PyMem_Free(any);
    PyMem_Free(all);
    release(&ignore);
    release(&own);
    release(&cell);
    release(&alike);
    return result;
}

/* --- cell_pairs ----------------------------------------------------------------------- */

/* Every pair of some image-classes (cells, (K, 4) int64 rows of gt_start, gt_stop,
 * pred_start, pred_stop): cell by cell, each prediction in order, its cell's ground truth
 * in order; (gt, pred) as two int64 bytearrays. */
static PyObject *cell_pairs(PyObject *self, PyObject *args)
{
    PyObject *o_cells;
    if (!PyArg_ParseTuple(args, "O:cell_pairs", &o_cells))
        return NULL;
    Buf cells = {0};
    PyObject *gt_out = NULL, *pred_out = NULL, *result = NULL;
    if (get(o_cells, &cells, VM_INT64, 0, "cells") < 0)
        goto done;
    if (count(&cells) % 4 != 0) {
        PyErr_SetString(PyExc_ValueError, "cells is not (K, 4)");
        goto done;
    }
    const Py_ssize_t n_cells = count(&cells) / 4;
    const int64_t *c = cells.view.buf;
    int64_t total = 0;
    for (Py_ssize_t k = 0; k < n_cells; k++) {
        const int64_t n_gt = c[4 * k + 1] - c[4 * k], n_pred = c[4 * k + 3] - c[4 * k + 2];
        if (c[4 * k] < 0 || c[4 * k + 2] < 0 || n_gt < 0 || n_pred < 0 ||
            (n_pred > 0 && n_gt > (PY_SSIZE_T_MAX / 8 - total) / n_pred)) {
            PyErr_Format(PyExc_ValueError, "cells[%zd] is not a cell", k);
            goto done;
        }
        total += n_gt * n_pred;
    }
    gt_out = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)total * 8);
    pred_out = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)total * 8);
    if (!gt_out || !pred_out)
        goto done;
    int64_t *gt = (int64_t *)PyByteArray_AS_STRING(gt_out);
    int64_t *pred = (int64_t *)PyByteArray_AS_STRING(pred_out);
    Py_BEGIN_ALLOW_THREADS
    Py_ssize_t at = 0;
    for (Py_ssize_t k = 0; k < n_cells; k++) {
        const int64_t g0 = c[4 * k], g1 = c[4 * k + 1], p0 = c[4 * k + 2], p1 = c[4 * k + 3];
        for (int64_t p = p0; p < p1; p++) {
            for (int64_t g = g0; g < g1; g++) {
                gt[at] = g;
                pred[at] = p;
                at++;
            }
        }
    }
    Py_END_ALLOW_THREADS
    result = PyTuple_Pack(2, gt_out, pred_out);
done:
    Py_XDECREF(gt_out);
    Py_XDECREF(pred_out);
    release(&cells);
    return result;
}

/* --- sorted_cells --------------------------------------------------------------------- */

/* sorted_cells' work in parts: part p fills places [lo, hi) of the outputs (the rank of
 * its first from where its run begins, found back in the input), then, once every part
 * has written its places, its range of the score order's places. */
typedef struct {
    const Buf *image, *label, *rows;
    const int64_t *o, *b;
    int32_t *r_out, *i_out, *l_out, *s_out, *k_out, *place;
    Py_ssize_t n;
    int parts, step;
} CellsWork;

static void cells_part(void *ctx, int part)
{
    CellsWork *w = ctx;
    const Py_ssize_t lo = vm_part_start(w->n, part, w->parts);
    const Py_ssize_t hi = vm_part_start(w->n, part + 1, w->parts);
    if (w->step == 1) {
        for (Py_ssize_t i = lo; i < hi; i++)
            w->s_out[i] = w->place[w->b[i]];
        return;
    }
    int64_t run_start = lo;
    if (lo > 0 && lo < hi) {
        /* Where the run of the part's first prediction begins: the int32 image and label
         * as the outputs hold them, read from the input. */
        const Py_ssize_t j = (Py_ssize_t)w->o[lo];
        const int32_t img = (int32_t)index_at(w->image, j), lab = (int32_t)index_at(w->label, j);
        while (run_start > 0) {
            const Py_ssize_t q = (Py_ssize_t)w->o[run_start - 1];
            if ((int32_t)index_at(w->image, q) != img || (int32_t)index_at(w->label, q) != lab)
                break;
            run_start--;
        }
    }
    for (Py_ssize_t i = lo; i < hi; i++) {
        const Py_ssize_t j = (Py_ssize_t)w->o[i];
        const int64_t img = index_at(w->image, j), lab = index_at(w->label, j);
        w->r_out[i] = (int32_t)index_at(w->rows, j);
        w->i_out[i] = (int32_t)img;
        w->l_out[i] = (int32_t)lab;
        w->place[j] = (int32_t)i;
        /* A run starts where the int32 image or label differs from the one before. */
        if (i > lo && (w->i_out[i] != w->i_out[i - 1] || w->l_out[i] != w->l_out[i - 1]))
            run_start = i;
        w->k_out[i] = (int32_t)(i - run_start);
    }
}

/* The predictions put in an order (order, a permutation of n, int64): their rows, images
 * and labels in it (as int32, numpy's astype), the score order by_score (a permutation,
 * int64) as places in it, and each one's rank: its place in its run of equal (image,
 * label). All five outputs int32 of n. With threads > 1 (default 1), in that many ranges
 * of places, each on a thread (the same bits). */
static PyObject *sorted_cells(PyObject *self, PyObject *args)
{
    PyObject *o_order, *o_by_score, *o_rows, *o_image, *o_label;
    PyObject *o_rows_out, *o_image_out, *o_label_out, *o_score_out, *o_rank_out;
    int threads = 1;
    if (!PyArg_ParseTuple(args, "OOOOOOOOOO|i:sorted_cells", &o_order, &o_by_score, &o_rows,
                          &o_image, &o_label, &o_rows_out, &o_image_out, &o_label_out,
                          &o_score_out, &o_rank_out, &threads))
        return NULL;
    Buf order = {0}, by_score = {0}, rows = {0}, image = {0}, label = {0};
    Buf rows_out = {0}, image_out = {0}, label_out = {0}, score_out = {0}, rank_out = {0};
    int32_t *place = NULL;
    PyObject *result = NULL;
    if (get(o_order, &order, VM_INT64, 0, "order") < 0 ||
        get(o_by_score, &by_score, VM_INT64, 0, "by_score") < 0 ||
        get(o_rows, &rows, VM_INDEX, 0, "rows") < 0 ||
        get(o_image, &image, VM_INDEX, 0, "image") < 0 ||
        get(o_label, &label, VM_INDEX, 0, "label") < 0 ||
        get(o_rows_out, &rows_out, VM_INDEX, 1, "rows_out") < 0 ||
        get(o_image_out, &image_out, VM_INDEX, 1, "image_out") < 0 ||
        get(o_label_out, &label_out, VM_INDEX, 1, "label_out") < 0 ||
        get(o_score_out, &score_out, VM_INDEX, 1, "score_out") < 0 ||
        get(o_rank_out, &rank_out, VM_INDEX, 1, "rank_out") < 0)
        goto done;
    const Py_ssize_t n = count(&order);
    const Buf *outs[5] = {&rows_out, &image_out, &label_out, &score_out, &rank_out};
    int fits = count(&by_score) == n && count(&rows) == n && count(&image) == n &&
               count(&label) == n && n < ((Py_ssize_t)1 << 31);
    for (int i = 0; i < 5; i++)
        fits = fits && count(outs[i]) == n && outs[i]->view.itemsize == 4;
    if (!fits) {
        PyErr_SetString(PyExc_ValueError, "the predictions' arrays do not fit");
        goto done;
    }
    if (check_indices(&order, n, "order") < 0 || check_indices(&by_score, n, "by_score") < 0)
        goto done;
    place = PyMem_Malloc((size_t)(n ? n : 1) * sizeof *place);
    if (!place) {
        PyErr_NoMemory();
        goto done;
    }
    CellsWork work = {
        .image = &image, .label = &label, .rows = &rows, .o = order.view.buf,
        .b = by_score.view.buf, .r_out = rows_out.view.buf, .i_out = image_out.view.buf,
        .l_out = label_out.view.buf, .s_out = score_out.view.buf, .k_out = rank_out.view.buf,
        .place = place, .n = n, .parts = vm_fine_parts(threads),
    };
    if (work.parts > n)
        work.parts = n > 0 ? (int)n : 1;
    Py_BEGIN_ALLOW_THREADS
    vm_run_parts_on(cells_part, &work, work.parts, vm_threads(threads));
    work.step = 1;
    vm_run_parts_on(cells_part, &work, work.parts, vm_threads(threads));
    Py_END_ALLOW_THREADS
    Py_INCREF(Py_None);
    result = Py_None;
done:
    PyMem_Free(place);
    release(&order);
    release(&by_score);
    release(&rows);
    release(&image);
    release(&label);
    release(&rows_out);
    release(&image_out);
    release(&label_out);
    release(&score_out);
    release(&rank_out);
    return result;
}

/* --- mark_pairs ----------------------------------------------------------------------- */

/* out[row[i], col[i]] = 1 for each i (out (R, C) bytes). */
static PyObject *mark_pairs(PyObject *self, PyObject *args)
{
    PyObject *o_out, *o_row, *o_col;
    if (!PyArg_ParseTuple(args, "OOO:mark_pairs", &o_out, &o_row, &o_col))
        return NULL;
    Buf out = {0}, row = {0}, col = {0};
    PyObject *result = NULL;
    if (get(o_out, &out, VM_BYTE, 1, "out") < 0 || get(o_row, &row, VM_INDEX, 0, "row") < 0 ||
        get(o_col, &col, VM_INDEX, 0, "col") < 0)
        goto done;
    const Py_ssize_t n = count(&row);
    if (out.view.ndim != 2 || count(&col) != n) {
        PyErr_SetString(PyExc_ValueError, "out, row and col do not fit");
        goto done;
    }
    const Py_ssize_t n_rows = out.view.shape[0], n_cols = out.view.shape[1];
    if (check_indices(&row, n_rows, "row") < 0 || check_indices(&col, n_cols, "col") < 0)
        goto done;
    u8 *o = out.view.buf;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++)
        o[(Py_ssize_t)index_at(&row, i) * n_cols + (Py_ssize_t)index_at(&col, i)] = 1;
    Py_END_ALLOW_THREADS
    Py_INCREF(Py_None);
    result = Py_None;
done:
    release(&out);
    release(&row);
    release(&col);
    return result;
}

/* --- class_order ---------------------------------------------------------------------- */

/* class_order's work in parts: each part counts the labels of its range of predictions
 * (and of its range of by_score) in tables of its own; their sums, class by class and part
 * by part, give each part its places, after those of the parts before it (stable passes:
 * the single pass's places). */
typedef struct {
    const Buf *label, *by_score;
    int64_t *s;         /* (K + 1,) the classes' starts */
    int64_t *next;      /* (parts, K) each part's next place of each class, by index */
    int64_t *next_rank; /* (parts, K) likewise, in by_score's order */
    int32_t *member, *o, *pl;
    Py_ssize_t n, n_classes;
    int parts, step;
} ClassWork;

static void class_part(void *ctx, int part)
{
    ClassWork *w = ctx;
    const Py_ssize_t lo = vm_part_start(w->n, part, w->parts);
    const Py_ssize_t hi = vm_part_start(w->n, part + 1, w->parts);
    int64_t *next = w->next + w->n_classes * part;
    int64_t *next_rank = w->next_rank + w->n_classes * part;
    switch (w->step) {
    case 0:
        memset(next, 0, (size_t)w->n_classes * sizeof *next);
        memset(next_rank, 0, (size_t)w->n_classes * sizeof *next_rank);
        for (Py_ssize_t i = lo; i < hi; i++)
            next[index_at(w->label, i)]++;
        for (Py_ssize_t j = lo; j < hi; j++)
            next_rank[index_at(w->label, (Py_ssize_t)index_at(w->by_score, j))]++;
        break;
    case 1:
        for (Py_ssize_t i = lo; i < hi; i++) {
            const int64_t k = index_at(w->label, i);
            w->member[i] = (int32_t)(next[k] - w->s[k]);
            w->o[next[k]++] = (int32_t)i;
        }
        break;
    default:
        for (Py_ssize_t j = lo; j < hi; j++) {
            const int64_t q = index_at(w->by_score, j);
            w->pl[next_rank[index_at(w->label, (Py_ssize_t)q)]++] = w->member[q];
        }
        break;
    }
}

/* Each part's counts in `table` ((parts, K)) turned into its first place of each class,
 * the classes starting at s. */
static void class_places(int64_t *table, const int64_t *s, Py_ssize_t n_classes, int parts)
{
    for (Py_ssize_t k = 0; k < n_classes; k++) {
        int64_t at = s[k];
        for (int p = 0; p < parts; p++) {
            const int64_t c = table[n_classes * p + k];
            table[n_classes * p + k] = at;
            at += c;
        }
    }
}

/* Every class's members and ranking in two passes of a counting sort: order (P, int32),
 * the predictions by class, stable (numpy's stable argsort of label); starts (K + 1,
 * int64), where each class starts in it; places (P, int32), class by class, the members'
 * places (in order) of the class's predictions in by_score's order (a permutation). With
 * threads > 1 (default 1), each pass in that many ranges, each on a thread (the same
 * bits). */
static PyObject *class_order(PyObject *self, PyObject *args)
{
    PyObject *o_label, *o_by_score, *o_order, *o_starts, *o_places;
    int threads = 1;
    if (!PyArg_ParseTuple(args, "OOOOO|i:class_order", &o_label, &o_by_score, &o_order,
                          &o_starts, &o_places, &threads))
        return NULL;
    Buf label = {0}, by_score = {0}, order = {0}, starts = {0}, places = {0};
    int64_t *next = NULL;
    int32_t *member = NULL;
    PyObject *result = NULL;
    if (get(o_label, &label, VM_INDEX, 0, "label") < 0 ||
        get(o_by_score, &by_score, VM_INDEX, 0, "by_score") < 0 ||
        get(o_order, &order, VM_INDEX, 1, "order") < 0 ||
        get(o_starts, &starts, VM_INT64, 1, "starts") < 0 ||
        get(o_places, &places, VM_INDEX, 1, "places") < 0)
        goto done;
    const Py_ssize_t n = count(&label), n_classes = count(&starts) - 1;
    if (n_classes < 0 || count(&by_score) != n || count(&order) != n || count(&places) != n ||
        order.view.itemsize != 4 || places.view.itemsize != 4 || n >= ((Py_ssize_t)1 << 31)) {
        PyErr_SetString(PyExc_ValueError, "label, by_score, order, starts and places do not fit");
        goto done;
    }
    if (check_indices(&label, n_classes, "label") < 0 ||
        check_indices(&by_score, n, "by_score") < 0)
        goto done;
    int parts = vm_fine_parts(threads);
    if ((Py_ssize_t)parts > n)
        parts = n > 0 ? (int)n : 1;
    const size_t table = (size_t)(n_classes ? n_classes : 1) * (size_t)parts;
    next = PyMem_Malloc(2 * table * sizeof *next);
    member = PyMem_Malloc((size_t)(n ? n : 1) * sizeof *member);
    if (!next || !member) {
        PyErr_NoMemory();
        goto done;
    }
    int64_t *s = starts.view.buf;
    ClassWork work = {
        .label = &label, .by_score = &by_score, .s = s, .next = next,
        .next_rank = next + table, .member = member, .o = order.view.buf,
        .pl = places.view.buf, .n = n, .n_classes = n_classes, .parts = parts,
    };
    Py_BEGIN_ALLOW_THREADS
    vm_run_parts_on(class_part, &work, parts, vm_threads(threads));
    s[0] = 0;
    for (Py_ssize_t k = 0; k < n_classes; k++) {
        int64_t c = 0;
        for (int p = 0; p < parts; p++)
            c += next[n_classes * p + k];
        s[k + 1] = s[k] + c;
    }
    class_places(work.next, s, n_classes, parts);
    class_places(work.next_rank, s, n_classes, parts);
    work.step = 1;
    vm_run_parts_on(class_part, &work, parts, vm_threads(threads));
    work.step = 2;
    vm_run_parts_on(class_part, &work, parts, vm_threads(threads));
    Py_END_ALLOW_THREADS
    Py_INCREF(Py_None);
    result = Py_None;
done:
    PyMem_Free(next);
    PyMem_Free(member);
    release(&label);
    release(&by_score);
    release(&order);
    release(&starts);
    release(&places);
    return result;
}

/* --- pair_iou ------------------------------------------------------------------------- */

/* numpy's minimum and maximum of two float64: NaN when either is NaN. */
static inline double np_minimum(double a, double b) { return (a <= b || a != a) ? a : b; }

static inline double np_maximum(double a, double b) { return (a >= b || a != a) ? a : b; }

/* The same of two numbers that are not NaN, without a branch (minsd and maxsd): between
 * two zeros of either sign they may give the other zero than numpy, which no side below
 * tells apart (hi - lo, then + extra, then the clamp: a zero's sign is lost in the + 0.0
 * or + 1.0). */
static inline double min_of(double a, double b) { return a < b ? a : b; }

static inline double max_of(double a, double b) { return a > b ? a : b; }

/* max_of(w, 0.0) by a mask (compilers turn the comparison with a constant into a branch,
 * which random boxes mispredict): w where w > 0, else +0.0. */
static inline double clamp0(double w)
{
    uint64_t bits;
    memcpy(&bits, &w, sizeof bits);
    bits &= (uint64_t)0 - (uint64_t)(w > 0.0);
    memcpy(&w, &bits, sizeof w);
    return w;
}

/* Width (or height) of a box or of an intersection as vocmatch.core.iou computes it:
 * hi - lo, then + extra, then clamped at 0.0, each rounded on its own. */
static inline double side(double hi, double lo, double extra)
{
    double w = hi - lo;
    w += extra;
    return np_maximum(w, 0.0);
}

/* The IoU of a pair, numpy's operations in numpy's order (pair_intersection, box_area,
 * iou_from_intersection): `a` the ground truth's box, `b` the prediction's, `area` the
 * ground truth's area. `exact` keeps numpy's NaN-propagating minimum and maximum; without
 * it (every coordinate finite, so that no side is NaN) the branchless ones give the same
 * bits. */
static inline double one_iou(const double *a, const double *b, double area, int crowd,
                             double extra, int exact)
{
    double w, h;
    if (exact) {
        w = side(np_minimum(a[2], b[2]), np_maximum(a[0], b[0]), extra);
        h = side(np_minimum(a[3], b[3]), np_maximum(a[1], b[1]), extra);
    } else {
        w = min_of(a[2], b[2]) - max_of(a[0], b[0]);
        w += extra;
        w = clamp0(w);
        h = min_of(a[3], b[3]) - max_of(a[1], b[1]);
        h += extra;
        h = clamp0(h);
    }
    const double inter = w * h;
    double pw = b[2] - b[0], ph = b[3] - b[1];
    pw += extra;
    ph += extra;
    const double pred_area = exact ? np_maximum(pw, 0.0) * np_maximum(ph, 0.0)
                                   : clamp0(pw) * clamp0(ph);
    double union_ = area + pred_area;
    union_ -= inter;
    if (crowd)
        union_ = pred_area;
    return union_ > 0.0 ? inter / union_ : 0.0;
}

/* One part of pair_iou's pairs: [lo, hi) of them, the first pair whose prediction's row is
 * out of range kept as bad_at (-1 without one) and its row, nothing read after it. */
typedef struct {
    const Buf *gt, *pred, *pred_rows;
    const double *gb, *ga, *pb;
    const u8 *crowd;
    double *out, extra;
    Py_ssize_t n_boxes;
    int parts;
    Py_ssize_t bad_at[VM_MAX_PARTS];
    int64_t bad_row[VM_MAX_PARTS];
} IouWork;

static void iou_part(void *ctx, int part)
{
    IouWork *w = ctx;
    const Py_ssize_t k = count(w->gt);
    const Py_ssize_t lo = vm_part_start(k, part, w->parts);
    const Py_ssize_t hi = vm_part_start(k, part + 1, w->parts);
    w->bad_at[part] = -1;
    for (Py_ssize_t i = lo; i < hi; i++) {
        const int64_t g = index_at(w->gt, i), p = index_at(w->pred, i);
        const int64_t r = w->pred_rows->held ? index_at(w->pred_rows, p) : p;
        if (r < 0 || r >= w->n_boxes) {
            w->bad_at[part] = (Py_ssize_t)p;
            w->bad_row[part] = r;
            break;
        }
        const double *a = w->gb + 4 * g, *b = w->pb + 4 * r;
        /* Finite when every coordinate is (an infinite or NaN one, or a sum overflowing,
         * takes the exact path). */
        const double probe = ((a[0] + a[1]) + (a[2] + a[3])) + ((b[0] + b[1]) + (b[2] + b[3]));
        w->out[i] = one_iou(a, b, w->ga[g], w->crowd[g], w->extra, !(probe - probe == 0.0));
    }
}

/* The IoU of each pair (gt[i], pred[i]) into out[i]: gt_boxes (G, 4) float64 corner boxes,
 * gt_area (G,) float64 their areas (box_area's), gt_crowd (G,) bytes, pred_boxes (R, 4)
 * float64, pred_rows None (prediction p is row p) or the row of each prediction (int32 or
 * int64), extra the widths' + 1 of the devkit (0.0 or 1.0). The operations of
 * pair_intersection, box_area and iou_from_intersection in their order: the intersection's
 * width and height, the prediction's area, union = gt_area + pred_area, union -= inter (the
 * prediction's area for a crowd region), inter / union where union > 0, else 0.0. With
 * threads > 1 (default 1), the pairs in that many equal ranges, each on a thread (each pair's
 * value is its own: the same bits); the error names the first bad pair's prediction. */
static PyObject *pair_iou(PyObject *self, PyObject *args)
{
    PyObject *o_gt_boxes, *o_gt_area, *o_gt_crowd, *o_pred_boxes, *o_pred_rows, *o_gt, *o_pred,
        *o_out;
    double extra;
    int threads = 1;
    if (!PyArg_ParseTuple(args, "OOOOOOOdO|i:pair_iou", &o_gt_boxes, &o_gt_area, &o_gt_crowd,
                          &o_pred_boxes, &o_pred_rows, &o_gt, &o_pred, &extra, &o_out,
                          &threads))
        return NULL;
    Buf gt_boxes = {0}, gt_area = {0}, gt_crowd = {0}, pred_boxes = {0}, pred_rows = {0},
        gt = {0}, pred = {0}, out = {0};
    PyObject *result = NULL;
    if (get(o_gt_boxes, &gt_boxes, VM_FLOAT64, 0, "gt_boxes") < 0 ||
        get(o_gt_area, &gt_area, VM_FLOAT64, 0, "gt_area") < 0 ||
        get(o_gt_crowd, &gt_crowd, VM_BYTE, 0, "gt_crowd") < 0 ||
        get(o_pred_boxes, &pred_boxes, VM_FLOAT64, 0, "pred_boxes") < 0 ||
        (o_pred_rows != Py_None && get(o_pred_rows, &pred_rows, VM_INDEX, 0, "pred_rows") < 0) ||
        get(o_gt, &gt, VM_INDEX, 0, "gt") < 0 || get(o_pred, &pred, VM_INDEX, 0, "pred") < 0 ||
        get(o_out, &out, VM_FLOAT64, 1, "out") < 0)
        goto done;
    const Py_ssize_t n_gt = count(&gt_area), n_boxes = count(&pred_boxes) / 4;
    const Py_ssize_t n_pred = pred_rows.held ? count(&pred_rows) : n_boxes;
    const Py_ssize_t k = count(&gt);
    if (count(&gt_boxes) != 4 * n_gt || count(&gt_crowd) != n_gt ||
        count(&pred_boxes) % 4 != 0 || count(&pred) != k || count(&out) != k) {
        PyErr_SetString(PyExc_ValueError, "pair_iou: the arrays do not fit");
        goto done;
    }
    if (check_indices(&gt, n_gt, "gt") < 0 || check_indices(&pred, n_pred, "pred") < 0)
        goto done;
    /* The rows are checked as they are read (the pairs read few of a large set's rows);
     * at the first out of range, nothing more is read and ValueError is raised. */
    IouWork work = {
        .gt = &gt, .pred = &pred, .pred_rows = &pred_rows, .gb = gt_boxes.view.buf,
        .ga = gt_area.view.buf, .pb = pred_boxes.view.buf, .crowd = gt_crowd.view.buf,
        .out = out.view.buf, .extra = extra, .n_boxes = n_boxes,
        .parts = vm_fine_parts(threads),
    };
    if (work.parts > k)
        work.parts = k > 0 ? (int)k : 1;
    Py_BEGIN_ALLOW_THREADS
    vm_run_parts_on(iou_part, &work, work.parts, vm_threads(threads));
    Py_END_ALLOW_THREADS
    for (int part = 0; part < work.parts; part++) {
        if (work.bad_at[part] >= 0) {
            PyErr_Format(PyExc_ValueError, "pred_rows[%zd] = %lld is out of range [0, %lld)",
                         work.bad_at[part], (long long)work.bad_row[part], (long long)n_boxes);
            goto done;
        }
    }
    Py_INCREF(Py_None);
    result = Py_None;
done:
    release(&gt_boxes);
    release(&gt_area);
    release(&gt_crowd);
    release(&pred_boxes);
    release(&pred_rows);
    release(&gt);
    release(&pred);
    release(&out);
    return result;
}

/* --- box_areas ------------------------------------------------------------------------- */

/* box_areas' work in parts: part p the areas [lo, hi). */
typedef struct {
    const double *b;
    const Buf *rows;
    double *o, extra;
    Py_ssize_t n;
    int parts;
} AreaWork;

static void area_part(void *ctx, int part)
{
    const AreaWork *w = ctx;
    const Py_ssize_t lo = vm_part_start(w->n, part, w->parts);
    const Py_ssize_t hi = vm_part_start(w->n, part + 1, w->parts);
    for (Py_ssize_t i = lo; i < hi; i++) {
        const double *box = w->b + 4 * (w->rows->held ? index_at(w->rows, i) : (int64_t)i);
        w->o[i] = side(box[2], box[0], w->extra) * side(box[3], box[1], w->extra);
    }
}

/* out[i], the area of box rows[i] of `boxes` (box i without rows) as box_area computes it:
 * each side hi - lo, + extra, clamped at 0.0 (numpy's maximum), then width * height. With
 * threads > 1 (default 1), in that many ranges, each on a thread (the same bits). */
static PyObject *box_areas(PyObject *self, PyObject *args)
{
    PyObject *o_boxes, *o_rows, *o_out;
    double extra;
    int threads = 1;
    if (!PyArg_ParseTuple(args, "OOdO|i:box_areas", &o_boxes, &o_rows, &extra, &o_out,
                          &threads))
        return NULL;
    Buf boxes = {0}, rows = {0}, out = {0};
    PyObject *result = NULL;
    if (get(o_boxes, &boxes, VM_FLOAT64, 0, "boxes") < 0 ||
        (o_rows != Py_None && get(o_rows, &rows, VM_INDEX, 0, "rows") < 0) ||
        get(o_out, &out, VM_FLOAT64, 1, "out") < 0)
        goto done;
    const Py_ssize_t n_boxes = count(&boxes) / 4, n = count(&out);
    if (count(&boxes) % 4 != 0 || (rows.held ? count(&rows) : n_boxes) != n) {
        PyErr_SetString(PyExc_ValueError, "box_areas: the arrays do not fit");
        goto done;
    }
    if (rows.held && check_indices(&rows, n_boxes, "rows") < 0)
        goto done;
    AreaWork work = {
        .b = boxes.view.buf, .rows = &rows, .o = out.view.buf, .extra = extra, .n = n,
        .parts = vm_fine_parts(threads),
    };
    if (work.parts > n)
        work.parts = n > 0 ? (int)n : 1;
    Py_BEGIN_ALLOW_THREADS
    vm_run_parts_on(area_part, &work, work.parts, vm_threads(threads));
    Py_END_ALLOW_THREADS
    Py_INCREF(Py_None);
    result = Py_None;
done:
    release(&boxes);
    release(&rows);
    release(&out);
    return result;
}

/* --- run_means ------------------------------------------------------------------------ */

/* A sum of values in [0, 1] held exactly: an integer in units of 2^-1074 (the least
 * subnormal), little-endian words. A value's 53-bit significand lands at most at bit
 * 1022 + 52; 1280 bits leave room for the carries of 2^64 values. */
#define SUM_WORDS 20

static int bit_length64(uint64_t v)
{
#if defined(__GNUC__) || defined(__clang__)
    return v ? 64 - __builtin_clzll(v) : 0;
#else
    int n = 0;
    while (v) {
        n++;
        v >>= 1;
    }
    return n;
#endif
}

/* Adds x (in [0, 1], sign bit clear) to the sum w; returns the highest word changed. */
static int sum_add(uint64_t *w, double x)
{
    uint64_t bits;
    memcpy(&bits, &x, sizeof bits);
    const uint64_t e = (bits >> 52) & 0x7ff, frac = bits & (((uint64_t)1 << 52) - 1);
    /* x = m * 2^-1074 * 2^pos */
    const uint64_t m = e ? frac | ((uint64_t)1 << 52) : frac;
    const int pos = e ? (int)e - 1 : 0;
    int i = pos >> 6;
    const int sh = pos & 63;
    const uint64_t lo = m << sh, hi = sh ? m >> (64 - sh) : 0;
    uint64_t s = w[i] + lo;
    uint64_t carry = s < lo;
    w[i] = s;
    i++;
    s = w[i] + hi;
    uint64_t next = s < hi;
    s += carry;
    next |= s < carry;
    w[i] = s;
    while (next) {
        i++;
        w[i] += 1;
        next = w[i] == 0;
    }
    return i;
}

/* Bits [at, at + 53) of the sum (at >= 0). */
static uint64_t sum_bits53(const uint64_t *w, int at)
{
    const int i = at >> 6, sh = at & 63;
    uint64_t v = w[i] >> sh;
    if (sh > 11 && i + 1 < SUM_WORDS)
        v |= w[i + 1] << (64 - sh);
    return v & (((uint64_t)1 << 53) - 1);
}

/* Whether some bit below `at` of the sum is set. */
static int sum_any_below(const uint64_t *w, int at)
{
    const int i = at >> 6, sh = at & 63;
    if (sh && (w[i] & (((uint64_t)1 << sh) - 1)))
        return 1;
    for (int j = 0; j < i; j++) {
        if (w[j])
            return 1;
    }
    return 0;
}

/* The sum w (words 0 to top) rounded to the nearest double, ties to even: its top 53 bits,
 * plus one where the bits below are more than half of the last one's, or exactly half and
 * the last bit is odd. */
static double sum_rounded(const uint64_t *w, int top)
{
    while (top >= 0 && w[top] == 0)
        top--;
    if (top < 0)
        return 0.0;
    const int length = top * 64 + bit_length64(w[top]);
    if (length <= 53)
        return ldexp((double)sum_bits53(w, 0), -1074); /* exact: a subnormal or normal */
    int at = length - 53;
    uint64_t q = sum_bits53(w, at);
    const int half = (int)((w[(at - 1) >> 6] >> ((at - 1) & 63)) & 1);
    if (half && ((q & 1) || sum_any_below(w, at - 1))) {
        q++;
        if (q == (uint64_t)1 << 53) {
            q >>= 1;
            at++;
        }
    }
    return ldexp((double)q, at - 1074);
}

/* run_means(values, bounds, out): out[k] = the mean of values[bounds[k]:bounds[k + 1]]: the
 * sum exactly rounded, then divided by the run's length (NaN for an empty run). values
 * float64, bounds int64 non-decreasing within [0, len(values)], out float64 of
 * len(bounds) - 1. Returns False, out left unspecified, where a value is not in [0, 1] or
 * has its sign bit set (NaN, -0.0): the caller sums those otherwise. */
static PyObject *run_means(PyObject *self, PyObject *args)
{
    PyObject *o_values, *o_bounds, *o_out;
    if (!PyArg_ParseTuple(args, "OOO:run_means", &o_values, &o_bounds, &o_out))
        return NULL;
    Buf values = {0}, bounds = {0}, out = {0};
    PyObject *result = NULL;
    if (get(o_values, &values, VM_FLOAT64, 0, "values") < 0 ||
        get(o_bounds, &bounds, VM_INT64, 0, "bounds") < 0 ||
        get(o_out, &out, VM_FLOAT64, 1, "out") < 0)
        goto done;
    const Py_ssize_t n = count(&values), n_runs = count(&bounds) - 1;
    const double *v = values.view.buf;
    const int64_t *b = bounds.view.buf;
    if (n_runs < 0 || count(&out) != n_runs) {
        PyErr_SetString(PyExc_ValueError, "run_means: the arrays do not fit");
        goto done;
    }
    for (Py_ssize_t k = 0; k <= n_runs; k++) {
        if (b[k] < (k ? b[k - 1] : 0) || b[k] > n) {
            PyErr_Format(PyExc_ValueError, "bounds[%zd] = %lld is out of order or range", k,
                         (long long)b[k]);
            goto done;
        }
    }
    int fits = 1;
    double *o = out.view.buf;
    uint64_t nan_bits = 0x7ff8000000000000ULL;
    double nan;
    memcpy(&nan, &nan_bits, sizeof nan);
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n && fits; i++)
        fits = v[i] >= 0.0 && v[i] <= 1.0 && !signbit(v[i]);
    uint64_t w[SUM_WORDS];
    for (Py_ssize_t k = 0; k < n_runs && fits; k++) {
        const int64_t start = b[k], stop = b[k + 1];
        if (stop == start) {
            o[k] = nan;
            continue;
        }
        memset(w, 0, sizeof w);
        int top = 0;
        for (int64_t i = start; i < stop; i++) {
            const int at = sum_add(w, v[i]);
            top = at > top ? at : top;
        }
        o[k] = sum_rounded(w, top) / (double)(stop - start);
    }
    Py_END_ALLOW_THREADS
    result = PyBool_FromLong(fits);
done:
    release(&values);
    release(&bounds);
    release(&out);
    return result;
}

/* --- module ---------------------------------------------------------------------------- */

static PyMethodDef methods[] = {
    {"set_bits", set_bits, METH_VARARGS,
     "set_bits(flags, pred, level): flags[pred[i]] |= 1 << level[i], for each i."},
    {"ranked_pass", ranked_pass, METH_VARARGS,
     "ranked_pass(gt, pred, iou, rank, ignore, crowd, thresholds, strict, first, taken, "
     "ranges): the unmatched rule's matched pairs (level, pred, gt, iou as bytes), in "
     "RankedMatcher.add's order (rank None: index order), and each area range of ranges "
     "(ignore, thresholds, taken, matched, ignored, alike, level) or None into its flags, "
     "in one pass."},
    {"devkit_flags", devkit_flags, METH_VARARGS,
     "devkit_flags(best_gt, best_iou, ignore, thresholds, strict, matched, ignored): the "
     "devkit rule's matching, one state per set and threshold."},
    {"devkit_hits", devkit_hits, METH_VARARGS,
     "devkit_hits(best_gt, best_iou, rank, ignore, thresholds, strict): the devkit rule's "
     "matched pairs (level, pred, gt, iou as bytes), in match_devkit's order."},
    {"score_cell_order", score_cell_order, METH_VARARGS,
     "score_cell_order(score, cell, by_score, order): by_score, the stable order by "
     "descending score; order, by cell, then descending score, then index."},
    {"hit_counts", hit_counts, METH_VARARGS,
     "hit_counts(level, pred, gt, image, ignore, passing, counting, every): each image's "
     "matched pairs at each threshold (every) and those whose ground truth counts "
     "(counting), of the passing predictions (passing None: all), added into (T, I)."},
    {"alike_cells", alike_cells, METH_VARARGS,
     "alike_cells(ignore, own, cell, alike): where each set of ignore is matched as own in "
     "the image-class (cell, non-decreasing) of each ground truth."},
    {"cell_pairs", cell_pairs, METH_VARARGS,
     "cell_pairs(cells): every pair (gt, pred as int64 bytes) of the cells (gt_start, "
     "gt_stop, pred_start, pred_stop), cell by cell, prediction by prediction."},
    {"sorted_cells", sorted_cells, METH_VARARGS,
     "sorted_cells(order, by_score, rows, image, label, rows_out, image_out, label_out, "
     "score_out, rank_out): the predictions in order (int32), the score order as places in "
     "it, and each one's rank in its run of equal (image, label)."},
    {"mark_pairs", mark_pairs, METH_VARARGS,
     "mark_pairs(out, row, col): out[row[i], col[i]] = 1 for each i."},
    {"class_order", class_order, METH_VARARGS,
     "class_order(label, by_score, order, starts, places): the predictions by class "
     "(stable), where each class starts, and each class's members' places in by_score's "
     "order, by a counting sort."},
    {"image_counts", image_counts, METH_VARARGS,
     "image_counts(flags, image, out): out[t, image[g]] += 1 for each g with flags[t, g]."},
    {"pair_iou", pair_iou, METH_VARARGS,
     "pair_iou(gt_boxes, gt_area, gt_crowd, pred_boxes, pred_rows, gt, pred, extra, out): "
     "out[i], the IoU of the pair (gt[i], pred[i]), as vocmatch.core.iou computes it."},
    {"box_areas", box_areas, METH_VARARGS,
     "box_areas(boxes, rows, extra, out): out[i], the area of box rows[i] (box i with rows "
     "None), as vocmatch.core.iou.box_area computes it."},
    {"run_means", run_means, METH_VARARGS,
     "run_means(values, bounds, out): out[k], the mean of values[bounds[k]:bounds[k + 1]] "
     "(its sum exactly rounded, as math.fsum, over its length; NaN for none); False where "
     "a value is not in [0, 1] or is -0.0."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "fastmatch", "The compiled matching kernels (fastmatch.c).", -1,
    methods,
};

PyMODINIT_FUNC PyInit_fastmatch(void) { return PyModule_Create(&module); }
