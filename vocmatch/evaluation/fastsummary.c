/* The compiled curves and AP of the VOC devkit's and the ultralytics package's summaries: the
 * same numbers to the bit as the numpy implementation (vocmatch/core/ap.py average_precision,
 * vocmatch/evaluation/ultralytics_summary.py), which stays the reference and the fallback.
 *
 * Bit-identical means the same float operations in the same order as numpy performs them:
 *
 * - np.interp(x, xp, fp, left, right): for each x, the place j of xp with xp[j] <= x <
 *   xp[j + 1] found by numpy's search (a guess from the previous x, checked around it, then
 *   bisection: with an unsorted xp the place depends on that path, so the path is the same);
 *   left before xp[0], right after the last, fp[j] at the last point or where xp[j] equals x,
 *   else slope * (x - xp[j]) + fp[j] with slope (fp[j+1] - fp[j]) / (xp[j+1] - xp[j]), and
 *   where that is NaN, slope * (x - xp[j+1]) + fp[j+1], and where that is NaN too while
 *   fp[j] == fp[j+1], fp[j];
 * - np.add.reduce over a contiguous float64 array (np.sum, .sum(), np.mean's sum): 0.0 plus
 *   numpy's pairwise sum of all the elements (fewer than 8: one after the other; up to 128:
 *   8 running sums over the elements 8 apart, combined ((0+1)+(2+3))+((4+5)+(6+7)), then the
 *   remainder one after the other; more: the halves, the first a multiple of 8 long, summed
 *   the same way and added);
 * - np.trapezoid(y, x): (x[i+1] - x[i]) * (y[i+1] + y[i]) / 2.0 for each i, then summed as
 *   above;
 * - np.maximum(a, b) as (a >= b || a is NaN) ? a : b, accumulated from the right for the
 *   precision envelope;
 * - integer counts converted to float64 before each division, as numpy's true division of
 *   integer arrays does.
 *
 * Safety: every length, index and element type is checked before the computation
 * (ValueError), which then runs without the GIL over the caller's buffers and scratch arrays.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "../buffers.h"
#include "../parts.h"

/* --- checks -------------------------------------------------------------------------- */

static int check(int ok, const char *message)
{
    if (!ok) {
        PyErr_SetString(PyExc_ValueError, message);
    }
    return ok;
}

/* --- numpy's float operations ------------------------------------------------------- */

/* numpy's pairwise sum of a[0..n). */
static double pairwise(const double *a, Py_ssize_t n)
{
    if (n < 8) {
        double res = 0.0;
        for (Py_ssize_t i = 0; i < n; i++) {
            res += a[i];
        }
        return res;
    }
    if (n <= 128) {
        double r[8];
        for (int j = 0; j < 8; j++) {
            r[j] = a[j];
        }
        Py_ssize_t i = 8;
        for (; i < n - (n % 8); i += 8) {
            for (int j = 0; j < 8; j++) {
                r[j] += a[i + j];
            }
        }
        double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for (; i < n; i++) {
            res += a[i];
        }
        return res;
    }
    Py_ssize_t half = n / 2;
    half -= half % 8;
    return pairwise(a, half) + pairwise(a + half, n - half);
}

/* np.add.reduce of a contiguous float64 array. */
static double numpy_sum(const double *a, Py_ssize_t n)
{
    return 0.0 + pairwise(a, n);
}

/* np.maximum(a, b). */
static inline double numpy_maximum(double a, double b)
{
    return (a >= b || isnan(a)) ? a : b;
}

/* np.maximum.accumulate(v[::-1])[::-1], in place. */
static void envelope(double *v, Py_ssize_t n)
{
    for (Py_ssize_t i = n - 2; i >= 0; i--) {
        v[i] = numpy_maximum(v[i + 1], v[i]);
    }
}

/* The place of key in arr[0..len) (len >= 2) as np.interp finds it: -1 before arr[0], len
 * after arr[len - 1], else j with arr[j] <= key < arr[j + 1] reached from `guess` the way
 * numpy reaches it. */
static Py_ssize_t interp_place(double key, const double *arr, Py_ssize_t len, Py_ssize_t guess)
{
    if (key > arr[len - 1]) {
        return len;
    }
    if (key < arr[0]) {
        return -1;
    }
    if (len <= 4) {
        Py_ssize_t i = 1;
        while (i < len && key >= arr[i]) {
            i++;
        }
        return i - 1;
    }
    Py_ssize_t low = 0, high = len;
    if (guess > len - 3) {
        guess = len - 3;
    }
    if (guess < 1) {
        guess = 1;
    }
    if (key < arr[guess]) {
        if (key >= arr[guess - 1]) {
            return guess - 1;
        }
        high = guess - 1;
        if (guess > 8 && key >= arr[guess - 8]) {
            low = guess - 8;
        }
    } else if (key < arr[guess + 1]) {
        return guess;
    } else if (key < arr[guess + 2]) {
        return guess + 1;
    } else {
        low = guess + 2;
        if (guess < len - 8 - 1 && key < arr[guess + 8]) {
            high = guess + 8;
        }
    }
    while (low < high) {
        Py_ssize_t mid = low + ((high - low) >> 1);
        if (key >= arr[mid]) {
            low = mid + 1;
        } else {
            high = mid;
        }
    }
    return low - 1;
}

/* np.interp(x, xp, fp, left, right) into out (n_xp >= 1). */
static void interp(const double *x, Py_ssize_t n_x, const double *xp, const double *fp,
                   Py_ssize_t n_xp, double left, double right, double *out)
{
    if (n_xp == 1) {
        for (Py_ssize_t i = 0; i < n_x; i++) {
            out[i] = x[i] < xp[0] ? left : (x[i] > xp[0] ? right : fp[0]);
        }
        return;
    }
    Py_ssize_t j = 0;
    for (Py_ssize_t i = 0; i < n_x; i++) {
        const double at = x[i];
        if (isnan(at)) {
            out[i] = at;
            continue;
        }
        j = interp_place(at, xp, n_xp, j);
        if (j == -1) {
            out[i] = left;
        } else if (j == n_xp) {
            out[i] = right;
        } else if (j == n_xp - 1 || xp[j] == at) {
            out[i] = fp[j];
        } else {
            const double slope = (fp[j + 1] - fp[j]) / (xp[j + 1] - xp[j]);
            double value = slope * (at - xp[j]) + fp[j];
            if (isnan(value)) {
                value = slope * (at - xp[j + 1]) + fp[j + 1];
                if (isnan(value) && fp[j] == fp[j + 1]) {
                    value = fp[j];
                }
            }
            out[i] = value;
        }
    }
}

/* np.searchsorted(arr, key, side="left") for an arr sorted with NaN last. */
static Py_ssize_t lower_bound(const double *arr, Py_ssize_t n, double key)
{
    Py_ssize_t low = 0, high = n;
    while (low < high) {
        Py_ssize_t mid = low + ((high - low) >> 1);
        double v = arr[mid];
        /* numpy's float order: v < key, NaN after every number */
        if (v < key || (key != key && v == v)) {
            low = mid + 1;
        } else {
            high = mid;
        }
    }
    return low;
}

/* --- average precision ---------------------------------------------------------------- */

/* The interpolations, as vocmatch/evaluation/fast_ap.py numbers them. */
enum { AP_ALL_POINT, AP_11_POINT, AP_101_POINT, AP_TRAPEZOID, AP_TRAPEZOID_TO_1, AP_CODES };

/* Scratch of a curve of up to n points. */
typedef struct {
    double *x, *y;   /* (n + 3) the curve with its added points */
    double *terms;   /* (n + 1 or the points) the terms summed */
    double *values;  /* (the points) */
} ApScratch;

/* AP of the curve (recall, precision) of n points under `code`, as
 * vocmatch.core.ap.average_precision computes it; `points` are the interpolation's levels
 * (11-point: np.arange(0.0, 1.1, 0.1); 101-point: COCO_RECALL_THRESHOLDS; trapezoid:
 * TRAPEZOID_RECALL_POINTS). */
static double curve_ap(const double *recall, const double *precision, Py_ssize_t n, int code,
                       const double *points, Py_ssize_t n_points, ApScratch *s)
{
    if (n == 0) {
        return 0.0;
    }
    if (code == AP_ALL_POINT) {
        s->x[0] = 0.0;
        s->y[0] = 0.0;
        memcpy(s->x + 1, recall, sizeof(double) * (size_t)n);
        memcpy(s->y + 1, precision, sizeof(double) * (size_t)n);
        s->x[n + 1] = 1.0;
        s->y[n + 1] = 0.0;
        envelope(s->y, n + 2);
        Py_ssize_t m = 0;
        for (Py_ssize_t i = 0; i < n + 1; i++) {
            /* written always, kept where recall changes (no branch to mispredict) */
            s->terms[m] = (s->x[i + 1] - s->x[i]) * s->y[i + 1];
            m += s->x[i + 1] != s->x[i];
        }
        return numpy_sum(s->terms, m);
    }
    if (code == AP_11_POINT) {
        /* The levels ascend, so a point reaches the first `c` of them (c its count of levels
         * at or below its recall; 0 for NaN): the best precision at level p is the maximum
         * over the points reaching more than p, gathered per count then from the top (a
         * maximum is the same in any order, NaN whenever one is NaN, as np.max). */
        double best[12];
        int seen[12] = {0};
        for (Py_ssize_t i = 0; i < n; i++) {
            int c = 0;
            for (int p = 0; p < 11; p++) {
                c += recall[i] >= points[p];
            }
            best[c] = seen[c] ? numpy_maximum(best[c], precision[i]) : precision[i];
            seen[c] = 1;
        }
        double total = 0.0;
        int reached = 0;
        double above = 0.0;
        for (int p = 10; p >= 0; p--) {
            if (seen[p + 1]) {
                above = reached ? numpy_maximum(above, best[p + 1]) : best[p + 1];
                reached = 1;
            }
            best[p + 1] = reached ? above : 0.0; /* the best at level p */
        }
        for (int p = 0; p < 11; p++) {
            total += best[p + 1];
        }
        return total / 11.0;
    }
    if (code == AP_101_POINT) {
        memcpy(s->y, precision, sizeof(double) * (size_t)n);
        envelope(s->y, n);
        for (Py_ssize_t p = 0; p < n_points; p++) {
            Py_ssize_t at = lower_bound(recall, n, points[p]);
            s->values[p] = at < n ? s->y[at] : 0.0;
        }
        return numpy_sum(s->values, n_points) / (double)n_points;
    }
    /* the trapezoid rule, closed by a drop to 0 at the last recall or at recall 1 */
    Py_ssize_t len = 0;
    s->x[len] = 0.0;
    s->y[len++] = 1.0;
    memcpy(s->x + len, recall, sizeof(double) * (size_t)n);
    memcpy(s->y + len, precision, sizeof(double) * (size_t)n);
    len += n;
    if (code == AP_TRAPEZOID) {
        s->x[len] = recall[n - 1];
        s->y[len++] = 0.0;
    }
    s->x[len] = 1.0;
    s->y[len++] = 0.0;
    envelope(s->y, len);
    interp(points, n_points, s->x, s->y, len, s->y[0], s->y[len - 1], s->values);
    for (Py_ssize_t p = 0; p + 1 < n_points; p++) {
        s->terms[p] = (points[p + 1] - points[p]) * (s->values[p + 1] + s->values[p]) / 2.0;
    }
    return numpy_sum(s->terms, n_points > 0 ? n_points - 1 : 0);
}

static int scratch_alloc(ApScratch *s, Py_ssize_t n, Py_ssize_t n_points)
{
    size_t size = (size_t)(n > n_points ? n : n_points) + 4;
    s->x = PyMem_Malloc(sizeof(double) * size);
    s->y = PyMem_Malloc(sizeof(double) * size);
    s->terms = PyMem_Malloc(sizeof(double) * size);
    s->values = PyMem_Malloc(sizeof(double) * size);
    return s->x && s->y && s->terms && s->values;
}

static void scratch_free(ApScratch *s)
{
    PyMem_Free(s->x);
    PyMem_Free(s->y);
    PyMem_Free(s->terms);
    PyMem_Free(s->values);
}

/* The interpolation's code and points, checked. */
static int check_points(int code, Py_ssize_t n_points)
{
    return check(code >= 0 && code < AP_CODES, "code: not an interpolation") &&
           check(code == AP_ALL_POINT || (code == AP_11_POINT && n_points == 11) ||
                     (code != AP_11_POINT && n_points >= 1),
                 "points: not the interpolation's");
}

/* The 11-point levels ascend (curve_ap counts the levels each recall reaches). */
static int check_ascending(int code, const double *points, Py_ssize_t n_points)
{
    int ok = 1;
    for (Py_ssize_t p = 1; code == AP_11_POINT && p < n_points; p++) {
        ok = ok && points[p - 1] < points[p];
    }
    return check(ok, "points: not ascending");
}

PyDoc_STRVAR(curve_ap_doc,
"curve_ap(recall, precision, code, points, /)\n"
"--\n\n"
"AP of one curve (float64 arrays as long as each other) under the interpolation `code`\n"
"with its levels `points`, as vocmatch.core.ap.average_precision gives it.");

static PyObject *py_curve_ap(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *objs[3];
    int code;
    if (!PyArg_ParseTuple(args, "OOiO:curve_ap", &objs[0], &objs[1], &code, &objs[2])) {
        return NULL;
    }
    static const char *names[3] = {"recall", "precision", "points"};
    Py_buffer views[3];
    int got = 0;
    PyObject *result = NULL;
    for (; got < 3; got++) {
        if (vm_get_buffer(objs[got], &views[got], VM_FLOAT64, 0, 0, names[got]) != 0) {
            goto done;
        }
    }
    const Py_ssize_t n = views[0].len / 8, n_points = views[2].len / 8;
    if (!check(views[1].len == views[0].len, "precision: not as long as recall") ||
        !check_points(code, n_points) || !check_ascending(code, views[2].buf, n_points)) {
        goto done;
    }
    ApScratch s;
    if (!scratch_alloc(&s, n, n_points)) {
        scratch_free(&s);
        PyErr_NoMemory();
        goto done;
    }
    double ap;
    Py_BEGIN_ALLOW_THREADS
    ap = curve_ap(views[0].buf, views[1].buf, n, code, views[2].buf, n_points, &s);
    Py_END_ALLOW_THREADS
    scratch_free(&s);
    result = PyFloat_FromDouble(ap);
done:
    for (int i = 0; i < got; i++) {
        PyBuffer_Release(&views[i]);
    }
    return result;
}

/* --- the ultralytics summary's classes ------------------------------------------------ */

typedef struct {
    const int64_t *order;    /* (N,) the records in the package's ranking */
    const int64_t *members;  /* (N,) the same, class after class (stable) */
    const int64_t *starts;   /* (K + 1,) where each class starts in members */
    const Py_buffer *matched, *ignored; /* (P,) bit levels[t]: matched / to ignored gt */
    const float *conf;       /* (N,) confidence in ranking order */
    const int64_t *levels;   /* (T,) */
    const int64_t *n_gt;     /* (K,) */
    const int64_t *rows;     /* (K,) each class's row of the outputs, -1 for none */
    int code;
    const double *points;
    const double *grid;      /* (G,) */
    Py_ssize_t n_classes, n_t, n_points, n_grid;
    double *ap, *p_curve, *r_curve, *p_all, *r_all;
} Summary;

typedef struct {
    int64_t *place;          /* (m,) each member's place in the ranking */
    uint64_t *matched, *ignored; /* (m,) */
    double *xp, *recall, *precision, *neg_grid; /* (m,), (m,), (m,), (G,) */
    ApScratch ap;
} SummaryScratch;

/* One class's outputs (row `row`), its m members at members[0..m). */
static void summary_class(const Summary *job, SummaryScratch *s, const int64_t *members,
                          Py_ssize_t m, int64_t n_gt, int64_t row)
{
    const Py_ssize_t fsize = job->matched->itemsize;
    for (Py_ssize_t i = 0; i < m; i++) {
        int64_t record = job->order[members[i]];
        s->matched[i] = vm_bits_at(job->matched->buf, fsize, record);
        s->ignored[i] = vm_bits_at(job->ignored->buf, fsize, record);
        /* -conf in float32 (exact), then as float64 */
        s->xp[i] = (double)(-job->conf[members[i]]);
    }
    const double denominator = (double)n_gt + 1e-16;
    for (Py_ssize_t t = 0; t < job->n_t; t++) {
        const int level = (int)job->levels[t];
        int64_t tp = 0;
        for (Py_ssize_t i = 0; i < m; i++) {
            tp += ((s->matched[i] >> level) & 1) == 1 && ((s->ignored[i] >> level) & 1) == 0;
            s->recall[i] = (double)tp / denominator;
            s->precision[i] = (double)tp / (double)(tp + ((int64_t)i + 1 - tp));
        }
        if (t == 0) {
            double *p_row = job->p_curve + row * job->n_grid;
            double *r_row = job->r_curve + row * job->n_grid;
            interp(s->neg_grid, job->n_grid, s->xp, s->recall, m, 0.0, s->recall[m - 1], r_row);
            interp(s->neg_grid, job->n_grid, s->xp, s->precision, m, 1.0, s->precision[m - 1],
                   p_row);
            job->p_all[row] = s->precision[m - 1];
            job->r_all[row] = s->recall[m - 1];
        }
        job->ap[row * job->n_t + t] = curve_ap(s->recall, s->precision, m, job->code,
                                               job->points, job->n_points, &s->ap);
    }
}

static void summary_all(const Summary *job, SummaryScratch *s)
{
    for (Py_ssize_t g = 0; g < job->n_grid; g++) {
        s->neg_grid[g] = -job->grid[g];
    }
    for (Py_ssize_t k = 0; k < job->n_classes; k++) {
        Py_ssize_t m = job->starts[k + 1] - job->starts[k];
        if (job->rows[k] < 0 || m == 0) {
            continue;
        }
        summary_class(job, s, job->members + job->starts[k], m, job->n_gt[k], job->rows[k]);
    }
}

PyDoc_STRVAR(ultralytics_classes_doc,
"ultralytics_classes(order, label, matched, ignored, conf, levels, n_gt, rows, code, points,\n"
"                    grid, ap, p_curve, r_curve, p_all, r_all, /)\n"
"--\n\n"
"Each class's AP at every level (R, T), its precision and recall at the first level read on\n"
"the confidence grid (R, G), and over all its predictions (R,), for the records `order`\n"
"(int64) ranks with confidence `conf` (float32, in that order); classes with row -1 or\n"
"without predictions are left as they are.");

static PyObject *ultralytics_classes(PyObject *self, PyObject *args)
{
    (void)self;
    enum { ORDER, LABEL, MATCHED, IGNORED, CONF, LEVELS, NGT, ROWS, POINTS, GRID, AP, PCURVE,
           RCURVE, PALL, RALL, N_ARGS };
    PyObject *objs[N_ARGS];
    int code;
    if (!PyArg_ParseTuple(args, "OOOOOOOOiOOOOOOO:ultralytics_classes", &objs[ORDER],
                          &objs[LABEL], &objs[MATCHED], &objs[IGNORED], &objs[CONF],
                          &objs[LEVELS], &objs[NGT], &objs[ROWS], &code, &objs[POINTS],
                          &objs[GRID], &objs[AP], &objs[PCURVE], &objs[RCURVE], &objs[PALL],
                          &objs[RALL])) {
        return NULL;
    }
    static const char *names[N_ARGS] = {"order",  "label",  "matched", "ignored", "conf",
                                        "levels", "n_gt",   "rows",    "points",  "grid",
                                        "ap",     "p_curve", "r_curve", "p_all",  "r_all"};
    static const vm_kind kinds[N_ARGS] = {VM_INT64,   VM_INTEGER, VM_INTEGER, VM_INTEGER,
                                          VM_FLOAT32, VM_INT64,   VM_INT64,   VM_INT64,
                                          VM_FLOAT64, VM_FLOAT64, VM_FLOAT64, VM_FLOAT64,
                                          VM_FLOAT64, VM_FLOAT64, VM_FLOAT64};
    Py_buffer views[N_ARGS];
    int got = 0;
    PyObject *result = NULL;
    int64_t *members = NULL, *starts = NULL;
    SummaryScratch s = {0};
    for (; got < N_ARGS; got++) {
        if (vm_get_buffer(objs[got], &views[got], kinds[got], 0, got >= AP, names[got]) != 0) {
            goto done;
        }
    }
    const Py_ssize_t n = views[ORDER].len / 8, n_pred = views[LABEL].len / views[LABEL].itemsize;
    const Py_ssize_t n_t = views[LEVELS].len / 8, n_k = views[NGT].len / 8;
    const Py_ssize_t n_points = views[POINTS].len / 8, n_grid = views[GRID].len / 8;
    const Py_ssize_t n_rows = views[PALL].len / 8;
    const Py_ssize_t fsize = views[MATCHED].itemsize;
    if (!check(views[IGNORED].itemsize == fsize, "ignored: not the size of matched") ||
        !check(views[MATCHED].len / fsize == n_pred && views[IGNORED].len == views[MATCHED].len,
               "matched, ignored: not as long as label") ||
        !check(views[CONF].len / 4 == n, "conf: not as long as order") ||
        !check(views[ROWS].len / 8 == n_k, "rows: not as long as n_gt") ||
        !check(n_t >= 1, "levels: empty") ||
        !check(n_grid >= 1, "grid: empty") ||
        !check(views[AP].len / 8 == n_rows * n_t, "ap: not (R, T)") ||
        !check(views[PCURVE].len / 8 == n_rows * n_grid && views[RCURVE].len == views[PCURVE].len,
               "p_curve, r_curve: not (R, G)") ||
        !check(views[RALL].len == views[PALL].len, "r_all: not as long as p_all") ||
        !check_points(code, n_points) ||
        !check_ascending(code, views[POINTS].buf, n_points)) {
        goto done;
    }
    const int64_t *order = views[ORDER].buf, *levels = views[LEVELS].buf;
    const int64_t *rows = views[ROWS].buf, *n_gt = views[NGT].buf;
    for (Py_ssize_t t = 0; t < n_t; t++) {
        if (!check(levels[t] >= 0 && levels[t] < 8 * fsize, "levels: past the flags' bits")) {
            goto done;
        }
    }
    for (Py_ssize_t k = 0; k < n_k; k++) {
        if (!check(rows[k] >= -1 && rows[k] < n_rows, "rows: out of range") ||
            !check(rows[k] < 0 || n_gt[k] > 0, "n_gt: a class with a row without ground truth")) {
            goto done;
        }
    }
    /* each class's records in ranking order: counted, then placed */
    starts = PyMem_Calloc((size_t)n_k + 1, sizeof(int64_t));
    members = PyMem_Malloc(sizeof(int64_t) * ((size_t)n + 1));
    if (starts == NULL || members == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!check(order[i] >= 0 && order[i] < n_pred, "order: out of range")) {
            goto done;
        }
        int64_t k = vm_int_at(&views[LABEL], order[i]);
        if (!check(k >= 0 && k < n_k, "label: out of range")) {
            goto done;
        }
        starts[k + 1]++;
    }
    int64_t largest = 0;
    for (Py_ssize_t k = 0; k < n_k; k++) {
        largest = starts[k + 1] > largest ? starts[k + 1] : largest;
        starts[k + 1] += starts[k];
    }
    {
        int64_t *next = PyMem_Malloc(sizeof(int64_t) * ((size_t)n_k + 1));
        if (next == NULL) {
            PyErr_NoMemory();
            goto done;
        }
        memcpy(next, starts, sizeof(int64_t) * (size_t)n_k);
        for (Py_ssize_t i = 0; i < n; i++) {
            members[next[vm_int_at(&views[LABEL], order[i])]++] = i;
        }
        PyMem_Free(next);
    }
    size_t size = (size_t)largest + 1;
    s.matched = PyMem_Malloc(sizeof(uint64_t) * size);
    s.ignored = PyMem_Malloc(sizeof(uint64_t) * size);
    s.xp = PyMem_Malloc(sizeof(double) * size);
    s.recall = PyMem_Malloc(sizeof(double) * size);
    s.precision = PyMem_Malloc(sizeof(double) * size);
    s.neg_grid = PyMem_Malloc(sizeof(double) * (size_t)n_grid);
    int ap_ok = scratch_alloc(&s.ap, (Py_ssize_t)largest, n_points);
    if (!(ap_ok && s.matched && s.ignored && s.xp && s.recall && s.precision && s.neg_grid)) {
        PyErr_NoMemory();
        goto done;
    }
    Summary job = {order, members, starts, &views[MATCHED], &views[IGNORED], views[CONF].buf,
                   levels, n_gt, rows, code, views[POINTS].buf, views[GRID].buf, n_k, n_t,
                   n_points, n_grid, views[AP].buf, views[PCURVE].buf, views[RCURVE].buf,
                   views[PALL].buf, views[RALL].buf};
    Py_BEGIN_ALLOW_THREADS
    summary_all(&job, &s);
    Py_END_ALLOW_THREADS
    result = Py_None;
    Py_INCREF(result);
done:
    PyMem_Free(members);
    PyMem_Free(starts);
    PyMem_Free(s.matched);
    PyMem_Free(s.ignored);
    PyMem_Free(s.xp);
    PyMem_Free(s.recall);
    PyMem_Free(s.precision);
    PyMem_Free(s.neg_grid);
    scratch_free(&s.ap);
    for (int i = 0; i < got; i++) {
        PyBuffer_Release(&views[i]);
    }
    return result;
}

/* --- each image's detections in descending confidence --------------------------------- */

/* -conf sorts before -other (numpy's float order: NaN after every number). */
static inline int conf_before(float conf, float other)
{
    float key = -conf, other_key = -other;
    return key < other_key || (other_key != other_key && key == key);
}

/* Stable merge sort of idx[0..n) by descending conf (scratch: n entries). */
static void sort_by_conf(int64_t *idx, int64_t *scratch, Py_ssize_t n, const float *conf)
{
    if (n < 2) {
        return;
    }
    if (n <= 16) {
        for (Py_ssize_t i = 1; i < n; i++) {
            int64_t v = idx[i];
            Py_ssize_t j = i;
            while (j > 0 && conf_before(conf[v], conf[idx[j - 1]])) {
                idx[j] = idx[j - 1];
                j--;
            }
            idx[j] = v;
        }
        return;
    }
    Py_ssize_t half = n / 2;
    sort_by_conf(idx, scratch, half, conf);
    sort_by_conf(idx + half, scratch, n - half, conf);
    memcpy(scratch, idx, sizeof(int64_t) * (size_t)half);
    Py_ssize_t a = 0, b = half, out = 0;
    while (a < half && b < n) {
        /* the left one first unless the right one sorts strictly before it */
        if (conf_before(conf[idx[b]], conf[scratch[a]])) {
            idx[out++] = idx[b++];
        } else {
            idx[out++] = scratch[a++];
        }
    }
    while (a < half) {
        idx[out++] = scratch[a++];
    }
}

PyDoc_STRVAR(image_order_doc,
"image_order(count, conf, within, /)\n"
"--\n\n"
"Into `within` (int64, as long as conf): the records image after image (`count` of each),\n"
"each image's in descending float32 `conf`, ties in record order: np.lexsort((-conf,\n"
"image)).");

static PyObject *image_order(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *objs[3];
    if (!PyArg_ParseTuple(args, "OOO:image_order", &objs[0], &objs[1], &objs[2])) {
        return NULL;
    }
    static const char *names[3] = {"count", "conf", "within"};
    static const vm_kind kinds[3] = {VM_INT64, VM_FLOAT32, VM_INT64};
    Py_buffer views[3];
    int got = 0;
    PyObject *result = NULL;
    int64_t *scratch = NULL;
    for (; got < 3; got++) {
        if (vm_get_buffer(objs[got], &views[got], kinds[got], 0, got == 2, names[got]) != 0) {
            goto done;
        }
    }
    const int64_t *count = views[0].buf;
    const Py_ssize_t n_images = views[0].len / 8, n = views[1].len / 4;
    if (!check(views[2].len / 8 == n, "within: not as long as conf")) {
        goto done;
    }
    int64_t total = 0, largest = 0;
    for (Py_ssize_t i = 0; i < n_images; i++) {
        if (!check(count[i] >= 0 && count[i] <= n - total, "count: not the records' counts")) {
            goto done;
        }
        total += count[i];
        largest = count[i] > largest ? count[i] : largest;
    }
    if (!check(total == n, "count: not the records' counts")) {
        goto done;
    }
    scratch = PyMem_Malloc(sizeof(int64_t) * ((size_t)largest + 1));
    if (scratch == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    int64_t *within = views[2].buf;
    const float *conf = views[1].buf;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) {
        within[i] = i;
    }
    int64_t start = 0;
    for (Py_ssize_t i = 0; i < n_images; i++) {
        sort_by_conf(within + start, scratch, count[i], conf);
        start += count[i];
    }
    Py_END_ALLOW_THREADS
    result = Py_None;
    Py_INCREF(result);
done:
    PyMem_Free(scratch);
    for (int i = 0; i < got; i++) {
        PyBuffer_Release(&views[i]);
    }
    return result;
}

/* --- the mean F1 curve ---------------------------------------------------------------- */

PyDoc_STRVAR(mean_f1_doc,
"mean_f1(p_curve, r_curve, eps, out, /)\n"
"--\n\n"
"Into `out` (G,): the class mean of the F1 curves 2 * p * r / (p + r + eps) of the rows of\n"
"p_curve and r_curve (R, G), as (2 * p_curve * r_curve / (p_curve + r_curve + eps)).mean(0)\n"
"gives it: the rows added one after the other, then divided by R.");

static PyObject *mean_f1(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *objs[3];
    double eps;
    if (!PyArg_ParseTuple(args, "OOdO:mean_f1", &objs[0], &objs[1], &eps, &objs[2])) {
        return NULL;
    }
    static const char *names[3] = {"p_curve", "r_curve", "out"};
    Py_buffer views[3];
    int got = 0;
    PyObject *result = NULL;
    for (; got < 3; got++) {
        if (vm_get_buffer(objs[got], &views[got], VM_FLOAT64, 0, got == 2, names[got]) != 0) {
            goto done;
        }
    }
    const Py_ssize_t n_grid = views[2].len / 8;
    if (!check(n_grid >= 1 && views[0].len > 0 && (views[0].len / 8) % n_grid == 0,
               "p_curve: not (R, G) with R >= 1") ||
        !check(views[1].len == views[0].len, "r_curve: not the shape of p_curve")) {
        goto done;
    }
    const Py_ssize_t n_rows = views[0].len / 8 / n_grid;
    const double *p = views[0].buf, *r = views[1].buf;
    double *out = views[2].buf;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t g = 0; g < n_grid; g++) {
        out[g] = 0.0;
    }
    for (Py_ssize_t row = 0; row < n_rows; row++) {
        const double *pr = p + row * n_grid, *rr = r + row * n_grid;
        for (Py_ssize_t g = 0; g < n_grid; g++) {
            out[g] += 2.0 * pr[g] * rr[g] / (pr[g] + rr[g] + eps);
        }
    }
    for (Py_ssize_t g = 0; g < n_grid; g++) {
        out[g] /= (double)n_rows;
    }
    Py_END_ALLOW_THREADS
    result = Py_None;
    Py_INCREF(result);
done:
    for (int i = 0; i < got; i++) {
        PyBuffer_Release(&views[i]);
    }
    return result;
}

/* --- class_curves ------------------------------------------------------------------- */

/* One call's classes, split into parts of whole classes near equal shares of the rows. */
typedef struct {
    const int64_t *rows, *starts;
    const void *score, *matched, *ignored;
    const double *n_gt;
    double *recall, *precision, *scores;
    int64_t *kept_starts;
    Py_ssize_t ssize, fsize;
    int level, guard;
    double eps;
    Py_ssize_t first[VM_MAX_PARTS + 1]; /* part p's classes: [first[p], first[p + 1]) */
    int parts;
    int writing; /* 0: count each class's kept rows into kept_starts[k + 1]; 1: write */
} CurvesWork;

/* Part `part`'s classes: with w->writing 0, each class's kept rows into kept_starts[k + 1]
 * (but the last part's: no class after them to place); with 1, their points from
 * kept_starts[k] on, and in the last part (the only one with one part) each class's end. */
static void curves_part(void *ctx, int part)
{
    const CurvesWork *w = ctx;
    const int64_t *rows = w->rows, *starts = w->starts;
    const Py_ssize_t fsize = w->fsize;
    const int level = w->level;
    if (!w->writing && part == w->parts - 1) {
        return; /* no class comes after the last part's: their counts place nothing */
    }
    for (Py_ssize_t k = w->first[part]; k < w->first[part + 1]; k++) {
        if (!w->writing) {
            int64_t kept = 0;
            for (int64_t i = starts[k]; i < starts[k + 1]; i++) {
                kept += (int64_t)(((vm_bits_at(w->ignored, fsize, rows[i]) >> level) & 1) == 0);
            }
            w->kept_starts[k + 1] = kept;
            continue;
        }
        /* numpy's cumulative sums of the class's hits and misses are integers (exact), made
         * float64 before each operation, as precision_recall_curve does. */
        int64_t tp = 0, seen = 0, at = w->kept_starts[k];
        const double counting = w->n_gt[k] > 0 ? w->n_gt[k] : NAN;
        for (int64_t i = starts[k]; i < starts[k + 1]; i++) {
            const int64_t p = rows[i];
            if ((vm_bits_at(w->ignored, fsize, p) >> level) & 1) {
                continue;
            }
            tp += (int64_t)((vm_bits_at(w->matched, fsize, p) >> level) & 1);
            seen++;
            const double tp_f = (double)tp, fp_f = (double)(seen - tp);
            w->recall[at] = tp_f / counting;
            if (w->guard) {
                w->precision[at] = tp_f / numpy_maximum(tp_f + fp_f, DBL_EPSILON);
            } else {
                w->precision[at] = tp_f / (tp_f + fp_f + w->eps);
            }
            const double v = w->ssize == 8 ? ((const double *)w->score)[p]
                                           : (double)((const float *)w->score)[p];
            w->scores[at] = v != v ? -INFINITY : v;
            at++;
        }
        if (part == w->parts - 1) {
            w->kept_starts[k + 1] = at; /* the last part's classes: not counted before */
        }
    }
}

/* Split the classes [0, n_k) of `n` rows into w->parts ranges of whole classes: part p
 * begins at the first class starting at or after p's equal share of the rows. */
static void curves_split(CurvesWork *w, Py_ssize_t n_k, Py_ssize_t n)
{
    Py_ssize_t k = 0;
    w->first[0] = 0;
    for (int p = 1; p < w->parts; p++) {
        const ptrdiff_t share = vm_part_start(n, p, w->parts);
        while (k < n_k && w->starts[k] < share) {
            k++;
        }
        w->first[p] = k;
    }
    w->first[w->parts] = n_k;
}

PyDoc_STRVAR(class_curves_doc,
"class_curves(rows, starts, score, matched, ignored, level, n_gt, guard, eps, recall,\n"
"             precision, scores, kept_starts, threads=1, /)\n"
"--\n\n"
"Each class's precision-recall curve at bit `level` of the flags: the predictions `rows`\n"
"(int64, classes one after another from `starts`, (K + 1,) int64) not flagged in `ignored`,\n"
"each a TP where flagged in `matched`; recall tp / n_gt[k] (float64, NaN for none), precision\n"
"tp / max(tp + fp, DBL_EPSILON) with `guard`, else tp / (tp + fp + eps); the scores (float32\n"
"or float64, NaN read as -inf) as float64. The kept points are written class after class\n"
"from 0, where each class's start in `kept_starts` (K + 1,) says. With threads > 1, the\n"
"classes in ranges of near equal shares of the rows, each on a thread (the same bits).");

static PyObject *class_curves(PyObject *self, PyObject *args)
{
    (void)self;
    enum { ROWS, STARTS, SCORE, MATCHED, IGNORED, NGT, RECALL, PRECISION, SCORES, KEPT, N_ARGS };
    PyObject *objs[N_ARGS];
    int level, guard, threads = 1;
    double eps;
    if (!PyArg_ParseTuple(args, "OOOOOiOpdOOOO|i:class_curves", &objs[ROWS], &objs[STARTS],
                          &objs[SCORE], &objs[MATCHED], &objs[IGNORED], &level, &objs[NGT],
                          &guard, &eps, &objs[RECALL], &objs[PRECISION], &objs[SCORES],
                          &objs[KEPT], &threads)) {
        return NULL;
    }
    static const char *names[N_ARGS] = {"rows",   "starts", "score",     "matched", "ignored",
                                        "n_gt",   "recall", "precision", "scores",  "kept_starts"};
    static const vm_kind kinds[N_ARGS] = {VM_INT64,   VM_INT64,   VM_FLOAT64, VM_INTEGER,
                                          VM_INTEGER, VM_FLOAT64, VM_FLOAT64, VM_FLOAT64,
                                          VM_FLOAT64, VM_INT64};
    Py_buffer views[N_ARGS];
    int got = 0;
    PyObject *result = NULL;
    for (; got < N_ARGS; got++) {
        int writable = got >= RECALL;
        int failed;
        if (got == SCORE) {
            /* float32 or float64 */
            failed = vm_get_buffer(objs[got], &views[got], VM_FLOAT64, 0, 0, names[got]) != 0;
            if (failed && PyErr_ExceptionMatches(PyExc_ValueError)) {
                PyErr_Clear();
                failed = vm_get_buffer(objs[got], &views[got], VM_FLOAT32, 0, 0, names[got]) != 0;
            }
        } else {
            failed = vm_get_buffer(objs[got], &views[got], kinds[got], 0, writable, names[got]) != 0;
        }
        if (failed) {
            goto done;
        }
    }
    const Py_ssize_t n = views[ROWS].len / 8, n_k = views[NGT].len / 8;
    const Py_ssize_t ssize = views[SCORE].itemsize, n_pred = views[SCORE].len / ssize;
    const Py_ssize_t fsize = views[MATCHED].itemsize;
    const int64_t *rows = views[ROWS].buf, *starts = views[STARTS].buf;
    if (!check(views[STARTS].len / 8 == n_k + 1 && views[KEPT].len == views[STARTS].len,
               "starts, kept_starts: not (K + 1,)") ||
        !check(views[IGNORED].itemsize == fsize, "ignored: not the size of matched") ||
        !check(views[MATCHED].len / fsize == n_pred && views[IGNORED].len == views[MATCHED].len,
               "matched, ignored: not as long as score") ||
        !check(views[RECALL].len / 8 == n && views[PRECISION].len / 8 == n &&
                   views[SCORES].len / 8 == n,
               "recall, precision, scores: not as long as rows") ||
        !check(level >= 0 && level < 8 * fsize, "level: past the flags' bits") ||
        !check(starts[0] == 0 && starts[n_k] == n, "starts: not from 0 to the rows")) {
        goto done;
    }
    for (Py_ssize_t k = 0; k < n_k; k++) {
        if (!check(starts[k] <= starts[k + 1], "starts: not ascending")) {
            goto done;
        }
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!check(rows[i] >= 0 && rows[i] < n_pred, "rows: out of range")) {
            goto done;
        }
    }
    CurvesWork work = {
        .rows = rows, .starts = starts, .score = views[SCORE].buf,
        .matched = views[MATCHED].buf, .ignored = views[IGNORED].buf, .n_gt = views[NGT].buf,
        .recall = views[RECALL].buf, .precision = views[PRECISION].buf,
        .scores = views[SCORES].buf, .kept_starts = views[KEPT].buf, .ssize = ssize,
        .fsize = fsize, .level = level, .guard = guard, .eps = eps,
        .parts = vm_fine_parts(threads), .writing = 0,
    };
    curves_split(&work, n_k, n);
    Py_BEGIN_ALLOW_THREADS
    work.kept_starts[0] = 0;
    if (work.parts > 1) {
        /* Each class's kept rows, then where its points start (after the classes before
         * it); then the points, each part writing its own classes' slice. */
        vm_run_parts_on(curves_part, &work, work.parts, vm_threads(threads));
        for (Py_ssize_t k = 0; k < work.first[work.parts - 1]; k++) {
            work.kept_starts[k + 1] += work.kept_starts[k];
        }
    }
    work.writing = 1;
    vm_run_parts_on(curves_part, &work, work.parts, vm_threads(threads));
    Py_END_ALLOW_THREADS
    Py_INCREF(Py_None);
    result = Py_None;
done:
    for (int i = 0; i < got; i++) {
        PyBuffer_Release(&views[i]);
    }
    return result;
}

static PyMethodDef methods[] = {
    {"class_curves", class_curves, METH_VARARGS, class_curves_doc},
    {"curve_ap", py_curve_ap, METH_VARARGS, curve_ap_doc},
    {"image_order", image_order, METH_VARARGS, image_order_doc},
    {"mean_f1", mean_f1, METH_VARARGS, mean_f1_doc},
    {"ultralytics_classes", ultralytics_classes, METH_VARARGS, ultralytics_classes_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "fastsummary",
    "The compiled curves and AP of the devkit and ultralytics summaries (see "
    "vocmatch/evaluation/fastsummary.c).",
    -1, methods,
};

PyMODINIT_FUNC PyInit_fastsummary(void)
{
    return PyModule_Create(&module);
}
