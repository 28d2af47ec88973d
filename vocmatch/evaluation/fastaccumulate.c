/* The compiled accumulation: pycocotools' accumulation of every class in every area range in
 * one call, the same numbers to the bit as the numpy implementation
 * (vocmatch/evaluation/coco_tables.py, coco_accumulate_sparse, read by ClassBits.coco_area).
 *
 * For a class in an area range, at each IoU threshold and each maxDets limit, pycocotools
 * walks the class's predictions in ranking order and keeps those ranked below the limit in
 * their image-class. A prediction matched at the threshold is a true positive unless its
 * object is ignored (then it does not count); an unmatched one is a false positive when it
 * lies inside the area range (else it does not count). At the k-th true positive, with c
 * predictions counted so far, precision is k / (k + (c - k) + eps) in float64, eps =
 * np.spacing(1), the same operations in the same order as numpy's tp / (tp + fp + eps).
 * Recall after k true positives is k / n_gt; the interpolated precision at recall level r is
 * the best precision from the first true positive reaching r on (the envelope from the
 * right: maxima are exact), 0 where r is never reached. Recall is n_tp / n_gt where some
 * prediction counts, else 0.
 *
 * image_results makes each image's result (vocmatch.evaluation.result.ImageResult) from
 * the count rows, as vocmatch/evaluation/from_records.py does in Python.
 *
 * Safety: every length and index is checked before the computation (ValueError), which then
 * runs without the GIL over the caller's buffers; the only allocations are scratch arrays:
 * the largest class's flags (17 bytes per prediction and area range), and a few of
 * thresholds x recall levels.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <float.h>
#include <stdint.h>
#include <string.h>

#include "../buffers.h"

/* --- bits ---------------------------------------------------------------------------- */

/* The index of the lowest set bit of a nonzero word. */
static inline int lowest_bit(uint64_t word)
{
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_ctzll(word);
#else
    int bit = 0;
    while ((word & 1) == 0) {
        word >>= 1;
        bit++;
    }
    return bit;
#endif
}

/* --- the accumulation --------------------------------------------------------------- */

typedef struct {
    const int64_t *rows;   /* (N,) each class's predictions in its ranking, class by class */
    const int64_t *rank;   /* (N,) each one's rank in its image-class */
    const int64_t *starts; /* (K + 1,) where each class starts in rows */
    const int64_t *n_gt;   /* (K, A) ground truth that counts */
    const double *levels;  /* (R,) recall levels */
    const int64_t *max_dets; /* (M,) */
    const char *area;      /* (P,) bit a: inside the a-th area range */
    const char *matched;   /* (P, A) bit t: matched at the t-th threshold */
    const char *ignored;   /* (P, A) bit t: matched to ignored ground truth */
    Py_ssize_t area_size, flag_size;
    Py_ssize_t n_classes, n_areas, n_thresholds, n_levels, n_max_dets;
    double eps;
    double *precision; /* (K, A, T, R, M) */
    double *recall;    /* (K, A, T, M) */
} Job;

typedef struct {
    /* The class's flags in its ranking, area range by area range (read once per class,
     * then walked contiguously): */
    uint64_t *matched, *ignored; /* (A, n) the thresholds' bits: true positives (matched to
                                  * ground truth that counts); matched to ignored ground
                                  * truth, where the prediction lies inside (else none) */
    uint8_t *inside;             /* (A, n) */
    Py_ssize_t *reach;  /* (R,) true positives before each recall level is reached */
    Py_ssize_t *level_at; /* (n + 1,) the last level reached at each count of true positives
                           * (-1 before the first) */
    /* (T, R) the true positive of best precision among those of each level: its true
     * positives and its counted predictions (0 for none) */
    int64_t *best_tp, *best_counted;
    int64_t *tp, *delta; /* (T,) true positives; counted minus the unmatched rule's count */
} Scratch;

/* Precision at a true positive: tp / (tp + fp + eps) in float64, as numpy computes it. */
static inline double precision_of(int64_t n_tp, int64_t counted, double eps)
{
    const double tp_sum = (double)n_tp;
    const double fp_sum = (double)(counted - n_tp);
    return tp_sum / (tp_sum + fp_sum + eps);
}

/* Whether the precision at a true positive (tp, counted) is above that at another (0 counted
 * for none), without dividing where it can: the rounding of the division is monotonic, so
 * the true positive of the highest exact ratio tp / (counted + eps) has the highest rounded
 * precision, and the block's maximum is the precision of that one. With counted >= 2, the
 * denominator counted + eps rounds to counted (eps, np.spacing(1) = 2**-52, is at most half
 * its spacing, and a tie rounds to the even integer), and the
 * exact ratios compare as products of integers (below 2**62 where `exact`, every count
 * being below 2**31); with counted 1 (1 + eps is a double of its own) the two precisions
 * are computed and compared. */
static inline int better(int64_t n_tp, int64_t counted, int64_t best_tp, int64_t best_counted,
                         double eps, int exact)
{
    if (best_counted == 0) {
        return 1;
    }
    if (exact && counted >= 2 && best_counted >= 2) {
        return n_tp * best_counted > best_tp * counted;
    }
    return precision_of(n_tp, counted, eps) > precision_of(best_tp, best_counted, eps);
}

/* pycocotools' accumulation of class k in area range a at maxDets limit m. */
static void accumulate_one(const Job *job, Scratch *s, Py_ssize_t k, Py_ssize_t a,
                           Py_ssize_t m, int64_t n_gt)
{
    const Py_ssize_t n_t = job->n_thresholds, n_r = job->n_levels, n_m = job->n_max_dets;
    const int64_t low = job->starts[k], high = job->starts[k + 1];
    const int64_t max_det = job->max_dets[m];
    const Py_ssize_t n_a = job->n_areas;
    for (Py_ssize_t t = 0; t < n_t; t++) {
        s->tp[t] = 0;
        s->delta[t] = 0;
        for (Py_ssize_t r = 0; r < n_r; r++) {
            s->best_counted[t * n_r + r] = 0;
        }
    }
    const int64_t n = high - low;
    /* Integer comparisons of the ratios (see better()) hold for eps up to 2**-52. */
    const int exact = n < ((int64_t)1 << 31) && job->eps >= 0.0 && job->eps <= DBL_EPSILON;
    const int64_t *rank = job->rank + low;
    const uint64_t *hits = s->matched + a * n, *ignored_of = s->ignored + a * n;
    const uint8_t *inside_of = s->inside + a * n;
    const Py_ssize_t *level_at = s->level_at;
    int64_t base = 0; /* predictions kept inside the area range */
    for (int64_t i = 0; i < n; i++) {
        if (rank[i] >= max_det) {
            continue;
        }
        const int inside = inside_of[i];
        base += inside;
        /* Matched to an ignored object: not counted (it was counted in base). */
        for (uint64_t ignored = ignored_of[i]; ignored != 0; ignored &= ignored - 1) {
            s->delta[lowest_bit(ignored)] -= 1;
        }
        for (uint64_t hit = hits[i]; hit != 0; hit &= hit - 1) {
            const int t = lowest_bit(hit);
            s->delta[t] += 1 - inside; /* a true positive counts, inside or not */
            const int64_t n_tp = ++s->tp[t];
            const Py_ssize_t level = level_at[n_tp];
            if (level < 0) {
                continue;
            }
            const int64_t counted = base + s->delta[t];
            int64_t *best_tp = &s->best_tp[t * n_r + level];
            int64_t *best_counted = &s->best_counted[t * n_r + level];
            if (better(n_tp, counted, *best_tp, *best_counted, job->eps, exact)) {
                *best_tp = n_tp;
                *best_counted = counted;
            }
        }
    }
    const Py_ssize_t cell = k * n_a + a;
    for (Py_ssize_t t = 0; t < n_t; t++) {
        const int64_t counted = base + s->delta[t];
        job->recall[(cell * n_t + t) * n_m + m] =
            counted > 0 ? (double)s->tp[t] / (double)n_gt : 0.0;
        double *out = &job->precision[(cell * n_t + t) * n_r * n_m + m];
        double envelope = -1.0;
        for (Py_ssize_t r = n_r - 1; r >= 0; r--) {
            const int64_t best_counted = s->best_counted[t * n_r + r];
            const double b =
                best_counted ? precision_of(s->best_tp[t * n_r + r], best_counted, job->eps)
                             : -1.0;
            if (b > envelope) {
                envelope = b;
            }
            out[r * n_m] = s->reach[r] < s->tp[t] ? envelope : 0.0;
        }
    }
}

/* Every class in every area range with ground truth. */
/* Predictions fetched ahead of their turn in a class's gathering. */
#define PREFETCH_AHEAD 16

/* Ask for the row-th of rows of `size` bytes (no effect on the result). */
static inline void prefetch_row(const char *base, Py_ssize_t size, int64_t row)
{
#if defined(__GNUC__) || defined(__clang__)
    __builtin_prefetch(base + row * size);
#else
    (void)base;
    (void)size;
    (void)row;
#endif
}

static void accumulate_all(const Job *job, Scratch *s)
{
    const Py_ssize_t n_t = job->n_thresholds, n_r = job->n_levels, n_m = job->n_max_dets;
    for (Py_ssize_t k = 0; k < job->n_classes; k++) {
        const int64_t low = job->starts[k], high = job->starts[k + 1];
        int64_t top = 0; /* every prediction is kept at a limit of at least top */
        for (int64_t i = low; i < high; i++) {
            if (job->rank[i] + 1 > top) {
                top = job->rank[i] + 1;
            }
        }
        const Py_ssize_t n_a = job->n_areas;
        /* The bits of the thresholds (a flag's other bits are not read). */
        const uint64_t mask = n_t >= 64 ? ~(uint64_t)0 : (((uint64_t)1 << n_t) - 1);
        for (int64_t i = low; i < high; i++) {
            /* The rows lie anywhere in the flags: those a few places on are fetched early. */
            if (i + PREFETCH_AHEAD < high) {
                const int64_t ahead = job->rows[i + PREFETCH_AHEAD];
                prefetch_row(job->matched, job->flag_size * n_a, ahead);
                prefetch_row(job->ignored, job->flag_size * n_a, ahead);
                prefetch_row(job->area, job->area_size, ahead);
            }
            const int64_t row = job->rows[i];
            const uint64_t area = vm_bits_at(job->area, job->area_size, row);
            for (Py_ssize_t a = 0; a < n_a; a++) {
                const Py_ssize_t at = a * (high - low) + (i - low);
                const uint64_t inside = (area >> a) & 1;
                const uint64_t matched =
                    vm_bits_at(job->matched, job->flag_size, row * n_a + a) & mask;
                const uint64_t ignored =
                    vm_bits_at(job->ignored, job->flag_size, row * n_a + a) & matched;
                s->inside[at] = (uint8_t)inside;
                s->matched[at] = matched & ~ignored;
                s->ignored[at] = inside ? ignored : 0;
            }
        }
        for (Py_ssize_t a = 0; a < n_a; a++) {
            const int64_t n_gt = job->n_gt[k * n_a + a];
            if (n_gt <= 0) {
                continue;
            }
            /* The first true positive (counted from 0) whose recall (j + 1) / n_gt reaches
             * each level: a left search over the recall of every possible count, capped at
             * the class's predictions (a level past them is never reached). */
            Py_ssize_t j = 0;
            const int64_t cap = high - low;
            for (Py_ssize_t r = 0; r < n_r; r++) {
                while (j < cap && (double)(j + 1) / (double)n_gt < job->levels[r]) {
                    j++;
                }
                s->reach[r] = j;
            }
            /* The last level reached at each count of true positives: level r is reached
             * at the (reach[r] + 1)-th (levels past the class's predictions never are). */
            Py_ssize_t level = -1;
            for (int64_t n_tp = 0; n_tp <= cap; n_tp++) {
                while (level + 1 < n_r && s->reach[level + 1] <= n_tp - 1) {
                    level++;
                }
                s->level_at[n_tp] = level;
            }
            for (Py_ssize_t m = 0; m < n_m; m++) {
                if (m > 0 && job->max_dets[m - 1] >= top) {
                    /* The previous limit already kept every prediction. */
                    const Py_ssize_t cell = k * job->n_areas + a;
                    for (Py_ssize_t t = 0; t < n_t; t++) {
                        double *rec = &job->recall[(cell * n_t + t) * n_m];
                        rec[m] = rec[m - 1];
                        double *pre = &job->precision[(cell * n_t + t) * n_r * n_m];
                        for (Py_ssize_t r = 0; r < n_r; r++) {
                            pre[r * n_m + m] = pre[r * n_m + m - 1];
                        }
                    }
                    continue;
                }
                accumulate_one(job, s, k, a, m, n_gt);
            }
        }
    }
}

static int check(int ok, const char *message)
{
    if (!ok) {
        PyErr_SetString(PyExc_ValueError, message);
    }
    return ok;
}

PyDoc_STRVAR(coco_accumulate_doc,
"coco_accumulate(rows, rank, starts, n_gt, levels, max_dets, area, matched, ignored,\n"
"                n_thresholds, n_areas, eps, precision, recall, /)\n"
"--\n\n"
"pycocotools' accumulation of every class in every area range with ground truth, into\n"
"precision (K, A, T, R, M) and recall (K, A, T, M) (other cells are left as they are).");

static PyObject *coco_accumulate(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *objs[9], *out_objs[2];
    Py_ssize_t n_t, n_a;
    double eps;
    if (!PyArg_ParseTuple(args, "OOOOOOOOOnndOO:coco_accumulate", &objs[0], &objs[1], &objs[2],
                          &objs[3], &objs[4], &objs[5], &objs[6], &objs[7], &objs[8], &n_t,
                          &n_a, &eps, &out_objs[0], &out_objs[1])) {
        return NULL;
    }
    static const char *names[9] = {"rows", "rank", "starts", "n_gt", "levels", "max_dets",
                                   "area", "matched", "ignored"};
    Py_buffer views[11];
    int got = 0;
    PyObject *result = NULL;
    for (; got < 11; got++) {
        vm_kind kind = got == 4 || got >= 9 ? VM_FLOAT64 : VM_INTEGER;
        Py_ssize_t size = got < 6 && got != 4 ? 8 : 0;
        PyObject *obj = got < 9 ? objs[got] : out_objs[got - 9];
        const char *name = got < 9 ? names[got] : (got == 9 ? "precision" : "recall");
        if (vm_get_buffer(obj, &views[got], kind, size, got >= 9, name) != 0) {
            goto done;
        }
    }
    Job job;
    job.rows = views[0].buf;
    job.rank = views[1].buf;
    job.starts = views[2].buf;
    job.n_gt = views[3].buf;
    job.levels = views[4].buf;
    job.max_dets = views[5].buf;
    job.area = views[6].buf;
    job.matched = views[7].buf;
    job.ignored = views[8].buf;
    job.area_size = views[6].itemsize;
    job.flag_size = views[7].itemsize;
    job.eps = eps;
    job.precision = views[9].buf;
    job.recall = views[10].buf;
    const Py_ssize_t n = views[0].len / 8, n_starts = views[2].len / 8;
    const Py_ssize_t n_pred = views[6].len / views[6].itemsize;
    job.n_classes = n_starts - 1;
    job.n_levels = views[4].len / 8;
    job.n_max_dets = views[5].len / 8;
    job.n_thresholds = n_t;
    job.n_areas = n_a;
    const Py_ssize_t n_k = job.n_classes, n_r = job.n_levels;
    const Py_ssize_t n_m = job.n_max_dets;
    if (!check(n_t >= 0 && n_t <= 8 * job.flag_size, "n_thresholds: more than the flags' bits") ||
        !check(n_a >= 0 && n_a <= 8 * job.area_size, "n_areas: more than the area's bits") ||
        !check(n_starts >= 1, "starts: empty") ||
        !check(views[1].len == views[0].len, "rank: not as long as rows") ||
        !check(views[3].len / 8 == n_k * n_a, "n_gt: not (K, A)") ||
        !check(views[8].itemsize == job.flag_size, "ignored: not the size of matched") ||
        !check(views[7].len / job.flag_size == n_pred * n_a &&
                   views[8].len == views[7].len,
               "matched, ignored: not (P, A)") ||
        !check(views[9].len / 8 == n_k * n_a * n_t * n_r * n_m, "precision: not (K, A, T, R, M)") ||
        !check(views[10].len / 8 == n_k * n_a * n_t * n_m, "recall: not (K, A, T, M)")) {
        goto done;
    }
    if (!check(job.starts[0] == 0 && job.starts[n_k] == n, "starts: not 0 to len(rows)")) {
        goto done;
    }
    for (Py_ssize_t k = 0; k < n_k; k++) {
        if (!check(job.starts[k] <= job.starts[k + 1], "starts: decreasing")) {
            goto done;
        }
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!check(job.rows[i] >= 0 && job.rows[i] < n_pred, "rows: out of range") ||
            !check(job.rank[i] >= 0, "rank: negative") ||
            !check(job.rank[i] < INT64_MAX, "rank: 2**63 - 1 (one more would overflow)")) {
            goto done;
        }
    }
    int64_t largest = 0; /* the largest class */
    for (Py_ssize_t k = 0; k < n_k; k++) {
        if (job.starts[k + 1] - job.starts[k] > largest) {
            largest = job.starts[k + 1] - job.starts[k];
        }
    }
    const size_t cells = (size_t)largest * (size_t)n_a + 1;
    Scratch s;
    s.matched = PyMem_Malloc(sizeof(uint64_t) * cells);
    s.ignored = PyMem_Malloc(sizeof(uint64_t) * cells);
    s.inside = PyMem_Malloc(cells);
    s.reach = PyMem_Malloc(sizeof(Py_ssize_t) * (size_t)(n_r + 1));
    s.best_tp = PyMem_Malloc(sizeof(int64_t) * (size_t)(n_t * n_r + 1));
    s.best_counted = PyMem_Malloc(sizeof(int64_t) * (size_t)(n_t * n_r + 1));
    s.tp = PyMem_Malloc(sizeof(int64_t) * (size_t)(n_t + 1));
    s.delta = PyMem_Malloc(sizeof(int64_t) * (size_t)(n_t + 1));
    s.level_at = PyMem_Malloc(sizeof(Py_ssize_t) * ((size_t)largest + 1));
    if (s.matched && s.ignored && s.inside && s.reach && s.best_tp && s.best_counted && s.tp &&
        s.delta && s.level_at) {
        Py_BEGIN_ALLOW_THREADS
        accumulate_all(&job, &s);
        Py_END_ALLOW_THREADS
        result = Py_None;
        Py_INCREF(result);
    } else {
        PyErr_NoMemory();
    }
    PyMem_Free(s.matched);
    PyMem_Free(s.ignored);
    PyMem_Free(s.inside);
    PyMem_Free(s.reach);
    PyMem_Free(s.best_tp);
    PyMem_Free(s.best_counted);
    PyMem_Free(s.tp);
    PyMem_Free(s.delta);
    PyMem_Free(s.level_at);
done:
    for (int i = 0; i < got; i++) {
        PyBuffer_Release(&views[i]);
    }
    return result;
}

/* --- per-image results ----------------------------------------------------------------- */

/* The fields image_results sets, in this order (ImageResult's, which the caller checks). */
enum { F_KEY, F_GT_PATH, F_PRED_PATH, F_GT, F_GT_IGNORED, F_PRED, F_TP, F_FP, F_FN, F_MEAN_IOU,
       F_SWEEP, F_MATCHES, F_PRED_IGNORED, N_FIELDS };
/* Where each count field is in a row of the image counts (IMAGE_FIELDS' order). */
static const int count_column[N_FIELDS] = {-1, -1, -1, 0, 1, 2, 3, 4, 5, -1, -1, -1, 6};
#define N_COUNTS 7

/* One image's result: a new instance of `cls` (object.__new__) with every field set as the
 * dataclass's __init__ sets it (object.__setattr__), or NULL with an exception. */
static PyObject *image_result(PyTypeObject *cls, PyObject *empty, PyObject *const *names,
                              PyObject *const *values)
{
    PyObject *obj = PyBaseObject_Type.tp_new(cls, empty, NULL);
    if (obj == NULL) {
        return NULL;
    }
    for (int f = 0; f < N_FIELDS; f++) {
        if (PyObject_GenericSetAttr(obj, names[f], values[f]) != 0) {
            Py_DECREF(obj);
            return NULL;
        }
    }
    return obj;
}

PyDoc_STRVAR(image_results_doc,
"image_results(cls, names, values, mean_iou, keys, gt_paths, pred_paths, detail, sweeps,\n"
"              make_sweep, /)\n"
"--\n\n"
"Each image's result as a list of `cls` instances: counts from the (I, 7 + 3 S) int64 rows\n"
"of `values`, mean IoU from `mean_iou` (None for NaN), matches from `detail` (None: ()),\n"
"and the sweep of a row's last 3 S counts from the dict `sweeps` (else `make_sweep` of\n"
"their tuple, then kept there).");

static PyObject *image_results(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *cls, *names_obj, *values_obj, *iou_obj, *key_obj, *gt_obj, *pred_obj, *detail_obj;
    PyObject *sweeps, *make_sweep;
    if (!PyArg_ParseTuple(args, "O!O!OOOOOOO!O:image_results", &PyType_Type, &cls,
                          &PyTuple_Type, &names_obj, &values_obj, &iou_obj, &key_obj, &gt_obj,
                          &pred_obj, &detail_obj, &PyDict_Type, &sweeps, &make_sweep)) {
        return NULL;
    }
    if (PyTuple_GET_SIZE(names_obj) != N_FIELDS) {
        PyErr_SetString(PyExc_ValueError, "names: not the 13 fields");
        return NULL;
    }
    PyObject *const *names = &PyTuple_GET_ITEM(names_obj, 0);
    Py_buffer values_view, iou_view;
    if (vm_get_buffer(values_obj, &values_view, VM_INTEGER, 8, 0, "values") != 0) {
        return NULL;
    }
    if (vm_get_buffer(iou_obj, &iou_view, VM_FLOAT64, 0, 0, "mean_iou") != 0) {
        PyBuffer_Release(&values_view);
        return NULL;
    }
    PyObject *result = NULL, *keys = NULL, *gt_paths = NULL, *pred_paths = NULL;
    PyObject *detail = NULL, *empty = NULL;
    const Py_ssize_t n = iou_view.len / 8;
    keys = PySequence_Fast(key_obj, "keys: not a sequence");
    gt_paths = keys ? PySequence_Fast(gt_obj, "gt_paths: not a sequence") : NULL;
    pred_paths = gt_paths ? PySequence_Fast(pred_obj, "pred_paths: not a sequence") : NULL;
    if (pred_paths == NULL) {
        goto done;
    }
    if (detail_obj != Py_None) {
        detail = PySequence_Fast(detail_obj, "detail: not a sequence");
        if (detail == NULL) {
            goto done;
        }
    }
    const Py_ssize_t n_cols = n > 0 ? values_view.len / 8 / n : 0;
    if (!check(values_view.len == n * n_cols * 8 &&
                   (n == 0 || (n_cols >= N_COUNTS && (n_cols - N_COUNTS) % 3 == 0)),
               "values: not (I, 7 + 3 S)") ||
        !check(PySequence_Fast_GET_SIZE(keys) == n && PySequence_Fast_GET_SIZE(gt_paths) == n &&
                   PySequence_Fast_GET_SIZE(pred_paths) == n &&
                   (detail == NULL || PySequence_Fast_GET_SIZE(detail) == n),
               "keys, gt_paths, pred_paths, detail: not one per image")) {
        goto done;
    }
    empty = PyTuple_New(0);
    result = empty ? PyList_New(n) : NULL;
    if (result == NULL) {
        goto done;
    }
    const int64_t *rows = values_view.buf;
    const double *iou = iou_view.buf;
    for (Py_ssize_t j = 0; j < n; j++) {
        const int64_t *row = rows + j * n_cols;
        PyObject *fields[N_FIELDS] = {NULL};
        PyObject *counted = PyTuple_New(n_cols - N_COUNTS);
        int failed = counted == NULL;
        for (Py_ssize_t c = N_COUNTS; !failed && c < n_cols; c++) {
            PyObject *count = PyLong_FromLongLong(row[c]);
            failed = count == NULL;
            if (!failed) {
                PyTuple_SET_ITEM(counted, c - N_COUNTS, count);
            }
        }
        if (!failed) {
            PyObject *sweep = PyDict_GetItemWithError(sweeps, counted); /* borrowed */
            if (sweep != NULL) {
                Py_INCREF(sweep);
            } else if (!PyErr_Occurred()) {
                sweep = PyObject_CallOneArg(make_sweep, counted);
                if (sweep != NULL && PyDict_SetItem(sweeps, counted, sweep) != 0) {
                    Py_CLEAR(sweep);
                }
            }
            fields[F_SWEEP] = sweep;
            failed = sweep == NULL;
        }
        Py_XDECREF(counted);
        for (int f = 0; !failed && f < N_FIELDS; f++) {
            PyObject *value = NULL;
            if (count_column[f] >= 0) {
                value = PyLong_FromLongLong(row[count_column[f]]);
            } else if (f == F_KEY) {
                value = Py_NewRef(PySequence_Fast_GET_ITEM(keys, j));
            } else if (f == F_GT_PATH) {
                value = Py_NewRef(PySequence_Fast_GET_ITEM(gt_paths, j));
            } else if (f == F_PRED_PATH) {
                value = Py_NewRef(PySequence_Fast_GET_ITEM(pred_paths, j));
            } else if (f == F_MEAN_IOU) {
                value = iou[j] != iou[j] ? Py_NewRef(Py_None) : PyFloat_FromDouble(iou[j]);
            } else if (f == F_MATCHES) {
                value = Py_NewRef(detail ? PySequence_Fast_GET_ITEM(detail, j) : empty);
            } else {
                continue; /* the sweep, made above */
            }
            fields[f] = value;
            failed = value == NULL;
        }
        PyObject *obj = failed ? NULL : image_result((PyTypeObject *)cls, empty, names, fields);
        for (int f = 0; f < N_FIELDS; f++) {
            Py_XDECREF(fields[f]);
        }
        if (obj == NULL) {
            Py_CLEAR(result);
            goto done;
        }
        PyList_SET_ITEM(result, j, obj);
    }
done:
    Py_XDECREF(empty);
    Py_XDECREF(keys);
    Py_XDECREF(gt_paths);
    Py_XDECREF(pred_paths);
    Py_XDECREF(detail);
    PyBuffer_Release(&values_view);
    PyBuffer_Release(&iou_view);
    return result;
}

static PyMethodDef methods[] = {
    {"coco_accumulate", coco_accumulate, METH_VARARGS, coco_accumulate_doc},
    {"image_results", image_results, METH_VARARGS, image_results_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "fastaccumulate",
    "The compiled accumulation (see vocmatch/evaluation/fastaccumulate.c).", -1, methods,
};

PyMODINIT_FUNC PyInit_fastaccumulate(void)
{
    return PyModule_Create(&module);
}
