/* The compiled JSON number lists and image rows, each given as ASCII bytes (the report's
 * file is written from bytes: no str is made to be encoded again). float_list: a float64
 * array as the text json.dumps gives its list (allow_nan=False): "[a, b, c]", ", " between
 * numbers, each number float.__repr__'s text. image_rows (below): each image's row of the
 * JSON report.
 *
 * float.__repr__ writes the shortest decimal that reads back as the double (the closest to
 * it where several are as short), positional for decimal exponents -4 to 15 and as
 * "1e+16" / "1.5e-05" beyond, with ".0" after an integral positional value. Here the
 * digits come from the Schubfach search (R. Giulietti, "The Schubfach way to render
 * doubles", 2020): the double's rounding interval scaled by a power of ten so that it
 * spans at most ten units, each bound rounded to odd from a 126-bit significand of the
 * power (fastjson_table.h, written by fastjson_table.py), then the one decimal with a
 * trailing zero in the interval if there is one, else the closer of the two integers
 * around the double. Subnormal doubles take CPython's own formatting
 * (PyOS_double_to_string, the call float.__repr__ makes). The test suite compares both
 * with float.__repr__ on millions of doubles.
 *
 * A non-finite value is a ValueError (json.dumps' own refusal with allow_nan=False).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <math.h>
#include <string.h>

#include <structmember.h>

#include "../buffers.h"
#include "fastjson_table.h"

typedef unsigned __int128 u128;

/* floor(q * log10(2)), floor(log10(3/4 * 2**q)) and floor(e * log2(10)) for the exponents
 * of doubles (checked against exact arithmetic over -1080..980 and -400..400). */
static int floor_log10_pow2(int q) { return (int)(((int64_t)q * 661971961083LL) >> 41); }
static int floor_log10_three_quarters_pow2(int q)
{
    return (int)(((int64_t)q * 661971961083LL - 274743187321LL) >> 41);
}
static int floor_log2_pow10(int e) { return (int)(((int64_t)e * 913124641741LL) >> 38); }

/* (g * cp) / 2**127 rounded to odd, g = hi * 2**64 + lo (the low 64 bits of lo * cp are
 * dropped: g is rounded up, which the search allows for). */
static uint64_t round_to_odd(uint64_t hi, uint64_t lo, uint64_t cp)
{
    u128 low = (u128)lo * cp;
    u128 high = (u128)hi * cp;
    u128 y = high + (low >> 64);
    uint64_t sticky = ((uint64_t)y & 0x7fffffffffffffffULL) != 0;
    return (uint64_t)(y >> 63) | sticky;
}

/* The shortest decimal d * 10**e in the rounding interval of c * 2**q (c a normal double's
 * 53-bit significand), closest to it. */
static void shortest(uint64_t c, int q, uint64_t *digits, int *exponent)
{
    uint64_t out = c & 1; /* an odd significand's interval leaves out its bounds */
    uint64_t cb = c << 2;
    uint64_t cbr = cb + 2;
    uint64_t cbl;
    int k;
    if (c != ((uint64_t)1 << 52) || q == -1074) {
        cbl = cb - 2;
        k = floor_log10_pow2(q);
    }
    else {
        /* A power of two: the gap below is half the gap above. */
        cbl = cb - 1;
        k = floor_log10_three_quarters_pow2(q);
    }
    int h = q + floor_log2_pow10(-k) + 2;
    const uint64_t *g = POW10_SIG[-k - POW10_E_MIN];
    uint64_t vb = round_to_odd(g[0], g[1], cb << h);
    uint64_t vbl = round_to_odd(g[0], g[1], cbl << h);
    uint64_t vbr = round_to_odd(g[0], g[1], cbr << h);
    uint64_t s = vb >> 2;
    if (s >= 100) {
        uint64_t sp10 = (s / 10) * 10;
        uint64_t tp10 = sp10 + 10;
        int upin = vbl + out <= sp10 << 2;
        int wpin = (tp10 << 2) + out <= vbr;
        if (upin != wpin) {
            *digits = upin ? sp10 : tp10;
            *exponent = k;
            return;
        }
    }
    uint64_t t = s + 1;
    int uin = vbl + out <= s << 2;
    int win = (t << 2) + out <= vbr;
    if (uin != win) {
        *digits = uin ? s : t;
        *exponent = k;
        return;
    }
    /* Both in: the closer, the even one at a tie. */
    uint64_t mid = (s + t) << 1;
    *digits = (vb < mid || (vb == mid && (s & 1) == 0)) ? s : t;
    *exponent = k;
}

/* Writes d * 10**e (d > 0) as float.__repr__ does; returns the end. */
static char *layout(char *p, uint64_t d, int e)
{
    while (d % 10 == 0) {
        d /= 10;
        e++;
    }
    /* The digits, two at a time from the right. */
    static const char pairs[201] =
        "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
        "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
        "8081828384858687888990919293949596979899";
    char text[20];
    int n = 0;
    uint64_t r = d;
    while (r >= 100) {
        memcpy(text + 18 - n, pairs + 2 * (r % 100), 2);
        r /= 100;
        n += 2;
    }
    if (r >= 10) {
        memcpy(text + 18 - n, pairs + 2 * r, 2);
        n += 2;
    }
    else
        text[19 - n++] = (char)('0' + r);
    const char *digits = text + 20 - n;
    int point = n + e; /* the value is 0.digits * 10**point */
    if (point > -4 && point <= 16) {
        if (point <= 0) {
            *p++ = '0';
            *p++ = '.';
            for (int i = 0; i < -point; i++)
                *p++ = '0';
            memcpy(p, digits, (size_t)n);
            p += n;
        }
        else if (point < n) {
            memcpy(p, digits, (size_t)point);
            p += point;
            *p++ = '.';
            memcpy(p, digits + point, (size_t)(n - point));
            p += n - point;
        }
        else {
            memcpy(p, digits, (size_t)n);
            p += n;
            for (int i = n; i < point; i++)
                *p++ = '0';
            *p++ = '.';
            *p++ = '0';
        }
        return p;
    }
    *p++ = digits[0];
    if (n > 1) {
        *p++ = '.';
        memcpy(p, digits + 1, (size_t)(n - 1));
        p += n - 1;
    }
    int x = point - 1;
    *p++ = 'e';
    *p++ = x < 0 ? '-' : '+';
    if (x < 0)
        x = -x;
    if (x >= 100)
        *p++ = (char)('0' + x / 100);
    *p++ = (char)('0' + x / 10 % 10);
    *p++ = (char)('0' + x % 10);
    return p;
}

/* Writes x (finite) as float.__repr__ does; returns the end, or NULL with an exception. */
static char *write_double(char *p, double x)
{
    uint64_t bits;
    memcpy(&bits, &x, 8);
    uint64_t fraction = bits & (((uint64_t)1 << 52) - 1);
    int biased = (int)((bits >> 52) & 0x7ff);
    if (bits >> 63)
        *p++ = '-';
    if (biased == 0) {
        if (fraction == 0) {
            memcpy(p, "0.0", 3);
            return p + 3;
        }
        char *text = PyOS_double_to_string(x < 0 ? -x : x, 'r', 0, Py_DTSF_ADD_DOT_0, NULL);
        if (text == NULL)
            return NULL;
        size_t len = strlen(text);
        memcpy(p, text, len);
        PyMem_Free(text);
        return p + len;
    }
    uint64_t digits;
    int exponent;
    shortest(fraction | ((uint64_t)1 << 52), biased - 1075, &digits, &exponent);
    return layout(p, digits, exponent);
}

/* Whether every value is finite and none is subnormal: their text is written without a call
 * into the interpreter (write_plain). */
static int plain_doubles(const double *values, Py_ssize_t n)
{
    for (Py_ssize_t i = 0; i < n; i++) {
        uint64_t bits;
        memcpy(&bits, &values[i], 8);
        int biased = (int)((bits >> 52) & 0x7ff);
        if (biased == 0x7ff || (biased == 0 && (bits << 1) != 0))
            return 0;
    }
    return 1;
}

/* The values' text, ", " between them (every value finite and none subnormal: write_double
 * then calls nothing of the interpreter, and never fails); returns the end. */
static char *write_plain(char *p, const double *values, Py_ssize_t n)
{
    for (Py_ssize_t i = 0; i < n; i++) {
        if (i) {
            *p++ = ',';
            *p++ = ' ';
        }
        p = write_double(p, values[i]);
    }
    return p;
}

/* Each number takes at most 24 characters ("-2.2250738585072014e-308"), then ", ". */
#define NUMBER_MAX 26

/* float_list(values, /) -> bytes */
static PyObject *float_list(PyObject *self, PyObject *arg)
{
    (void)self;
    Py_buffer view;
    if (vm_get_buffer_as(arg, &view, VM_FLOAT64, 0, 0, "values", PyExc_TypeError) < 0)
        return NULL;
    const double *values = (const double *)view.buf;
    Py_ssize_t n = view.len / 8;
    if (n > (PY_SSIZE_T_MAX - 2) / NUMBER_MAX) {
        PyBuffer_Release(&view);
        return PyErr_NoMemory();
    }
    /* Written into the bytes object itself (ASCII), then cut to its length: the report's
     * file takes it as it is, without a str to encode. */
    PyObject *result = PyBytes_FromStringAndSize(NULL, n * NUMBER_MAX + 2);
    if (result == NULL) {
        PyBuffer_Release(&view);
        return NULL;
    }
    char *out = PyBytes_AS_STRING(result);
    char *p = out;
    *p++ = '[';
    if (plain_doubles(values, n)) {
        /* No call into the interpreter: the interpreter lock is released meanwhile, so that
         * another thread formats other lists at the same time. */
        Py_BEGIN_ALLOW_THREADS
        p = write_plain(p, values, n);
        Py_END_ALLOW_THREADS
        n = 0;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        double x = values[i];
        uint64_t bits;
        memcpy(&bits, &x, 8);
        if (((bits >> 52) & 0x7ff) == 0x7ff) {
            Py_DECREF(result);
            PyBuffer_Release(&view);
            PyErr_Format(PyExc_ValueError, "float_list: item %zd is not finite", i);
            return NULL;
        }
        if (i) {
            *p++ = ',';
            *p++ = ' ';
        }
        p = write_double(p, x);
        if (p == NULL) {
            Py_DECREF(result);
            PyBuffer_Release(&view);
            return NULL;
        }
    }
    *p++ = ']';
    PyBuffer_Release(&view);
    if (_PyBytes_Resize(&result, p - out) < 0)
        return NULL; /* _PyBytes_Resize released it */
    return result;
}

/* ---- Each image's row of the JSON report ----
 *
 * image_rows writes the text json.dumps gives each image's record (json_report._image's
 * mapping, ensure_ascii, ", " and ": " between items), the rows joined by a separator, in
 * one pass over the ImageResult objects: no record, sweep mapping or per-row string is
 * made. A row whose values are not what it writes exactly (a str, None, an int in the int64
 * range, a finite float, a tuple of sweep entries at the thresholds given) is written by the
 * Python callable given (the encoder's text of the record), as is one whose attributes
 * cannot be read: that call raises what the encoder raises.
 */

/* The text written so far: a bytes object made for it (the result, no copy at the end),
 * of `cap` bytes of which the first `len` are written (ASCII). */
typedef struct {
    PyObject *text;
    char *data;
    size_t len;
    size_t cap;
} Buffer;

/* Makes room for `more` bytes; -1 with MemoryError where it cannot. */
static int reserve(Buffer *b, size_t more)
{
    if (b->cap - b->len >= more)
        return 0;
    size_t cap = b->cap ? b->cap : (size_t)1 << 16;
    while (cap - b->len < more) {
        if (cap > (size_t)PY_SSIZE_T_MAX / 2) {
            PyErr_NoMemory();
            return -1;
        }
        cap *= 2;
    }
    if (b->text == NULL)
        b->text = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)cap);
    else if (_PyBytes_Resize(&b->text, (Py_ssize_t)cap) < 0)
        return -1; /* _PyBytes_Resize released it and set it to NULL */
    if (b->text == NULL)
        return -1;
    b->data = PyBytes_AS_STRING(b->text);
    b->cap = cap;
    return 0;
}

static int append(Buffer *b, const char *text, size_t n)
{
    if (reserve(b, n) < 0)
        return -1;
    memcpy(b->data + b->len, text, n);
    b->len += n;
    return 0;
}

#define APPEND_LITERAL(b, text) append((b), (text), sizeof(text) - 1)

/* A string constant with its length. */
typedef struct {
    const char *text;
    size_t length;
} Literal;
#define LITERAL(text) {(text), sizeof(text) - 1}

static char *hex4(char *p, Py_UCS4 c)
{
    static const char digits[] = "0123456789abcdef";
    *p++ = 'u';
    *p++ = digits[(c >> 12) & 0xf];
    *p++ = digits[(c >> 8) & 0xf];
    *p++ = digits[(c >> 4) & 0xf];
    *p++ = digits[c & 0xf];
    return p;
}

/* Writes `text` (a str) as json.encoder.encode_basestring_ascii does: printable ASCII but
 * '"' and '\\' as it is, the short escapes \" \\ \b \f \n \r \t, every other code point
 * below 0x10000 (lone surrogates too) as \uxxxx and each beyond as its UTF-16 surrogate
 * pair, lower-case hex digits. */
static int write_string(Buffer *b, PyObject *text)
{
    if (PyUnicode_READY(text) < 0)
        return -1;
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    /* At most 12 characters a code point (a surrogate pair), and the quotes. */
    if (n > (PY_SSIZE_T_MAX - 2) / 12) {
        PyErr_NoMemory();
        return -1;
    }
    if (reserve(b, (size_t)n * 12 + 2) < 0)
        return -1;
    char *p = b->data + b->len;
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    *p++ = '"';
    Py_ssize_t i = 0;
    if (PyUnicode_IS_ASCII(text)) {
        /* The printable run at the start (most names: all of it) copied at once. */
        const unsigned char *ascii = (const unsigned char *)data;
        while (i < n && ascii[i] >= ' ' && ascii[i] <= '~' && ascii[i] != '\\' &&
               ascii[i] != '"')
            i++;
        memcpy(p, ascii, (size_t)i);
        p += i;
    }
    for (; i < n; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        if (c >= ' ' && c <= '~' && c != '\\' && c != '"') {
            *p++ = (char)c;
            continue;
        }
        *p++ = '\\';
        switch (c) {
        case '\\':
        case '"':
            *p++ = (char)c;
            break;
        case '\b':
            *p++ = 'b';
            break;
        case '\f':
            *p++ = 'f';
            break;
        case '\n':
            *p++ = 'n';
            break;
        case '\r':
            *p++ = 'r';
            break;
        case '\t':
            *p++ = 't';
            break;
        default:
            if (c >= 0x10000) {
                p = hex4(p, 0xd800 | ((c - 0x10000) >> 10));
                *p++ = '\\';
                c = 0xdc00 | ((c - 0x10000) & 0x3ff);
            }
            p = hex4(p, c);
        }
    }
    *p++ = '"';
    b->len = (size_t)(p - b->data);
    return 0;
}

/* Writes x as int.__repr__ does. */
static int write_int(Buffer *b, long long x)
{
    char text[24];
    int n = 0;
    unsigned long long r = x < 0 ? 0ULL - (unsigned long long)x : (unsigned long long)x;
    do {
        text[23 - n++] = (char)('0' + r % 10);
        r /= 10;
    } while (r);
    if (x < 0)
        text[23 - n++] = '-';
    return append(b, text + 24 - n, (size_t)n);
}

/* The attribute names read, made once. */
enum {
    A_KEY, A_GT_PATH, A_PRED_PATH, A_GT, A_GT_IGNORED, A_PRED, A_PRED_IGNORED, A_TP, A_FP,
    A_FN, A_MEAN_IOU, A_SWEEP, A_THRESHOLD, A_COUNT
};
static const char *const ATTRIBUTE_NAMES[A_COUNT] = {
    "key", "gt_path", "pred_path", "gt", "gt_ignored", "pred", "pred_ignored", "tp", "fp",
    "fn", "mean_iou", "sweep", "threshold",
};
static PyObject *attribute[A_COUNT];

/* Where the attributes of one type lie where they are plain __slots__ (the records are
 * frozen dataclasses with slots): read there as its member descriptors read them, without
 * a lookup by name each time. */
typedef struct {
    PyTypeObject *type; /* a strong reference, or NULL for a free entry */
    Py_ssize_t offset[A_COUNT]; /* -1: read by name */
} Slots;

/* The types met: the images' and their sweep entries'. Others are read by name. */
#define TYPES_KEPT 2
typedef struct {
    Slots slots[TYPES_KEPT];
} Readers;

static void find_slots(Slots *slots, PyTypeObject *type)
{
    Py_INCREF(type);
    slots->type = type;
    for (int a = 0; a < A_COUNT; a++) {
        slots->offset[a] = -1;
        /* Only where reading by name would find the same member descriptor. */
        if (type->tp_getattro != PyObject_GenericGetAttr)
            continue;
        PyObject *found = _PyType_Lookup(type, attribute[a]); /* borrowed */
        if (found == NULL || !Py_IS_TYPE(found, &PyMemberDescr_Type))
            continue;
        PyMemberDescrObject *member = (PyMemberDescrObject *)found;
        if (member->d_member->type == T_OBJECT_EX && !(member->d_member->flags & READ_RESTRICTED) &&
            PyType_IsSubtype(type, PyDescr_TYPE(member)))
            slots->offset[a] = member->d_member->offset;
    }
}

static void release_readers(Readers *readers)
{
    for (int t = 0; t < TYPES_KEPT; t++)
        Py_CLEAR(readers->slots[t].type);
}

/* obj.<name> (a new reference), or NULL where it cannot be read (no exception set: the
 * fallback reads it again and raises). */
static PyObject *get_attribute(Readers *readers, PyObject *obj, int name)
{
    PyTypeObject *type = Py_TYPE(obj);
    for (int t = 0; t < TYPES_KEPT; t++) {
        Slots *slots = &readers->slots[t];
        if (slots->type == NULL)
            find_slots(slots, type);
        if (slots->type == type) {
            if (slots->offset[name] < 0)
                break;
            PyObject *value = *(PyObject **)((char *)obj + slots->offset[name]);
            Py_XINCREF(value);
            return value;
        }
    }
    PyObject *value = PyObject_GetAttr(obj, attribute[name]);
    if (value == NULL)
        PyErr_Clear();
    return value;
}

/* Written as it is: 1; not a value this writer writes exactly (or not readable): 0 (no
 * exception set); an error while writing: -1. */
#define WRITTEN 1
#define NOT_WRITTEN 0

static int write_int_attribute(Buffer *b, Readers *readers, PyObject *obj, int name)
{
    PyObject *value = get_attribute(readers, obj, name);
    if (value == NULL)
        return NOT_WRITTEN;
    int result = NOT_WRITTEN;
    if (PyLong_CheckExact(value)) {
        int overflow;
        long long x = PyLong_AsLongLongAndOverflow(value, &overflow);
        if (x == -1 && PyErr_Occurred())
            PyErr_Clear();
        else if (!overflow)
            result = write_int(b, x) < 0 ? -1 : WRITTEN;
    }
    Py_DECREF(value);
    return result;
}

/* A str attribute (or None, as null, where `nullable`). */
static int write_string_attribute(Buffer *b, Readers *readers, PyObject *obj, int name,
                                  int nullable)
{
    PyObject *value = get_attribute(readers, obj, name);
    if (value == NULL)
        return NOT_WRITTEN;
    int result = NOT_WRITTEN;
    if (PyUnicode_CheckExact(value))
        result = write_string(b, value) < 0 ? -1 : WRITTEN;
    else if (nullable && value == Py_None)
        result = APPEND_LITERAL(b, "null") < 0 ? -1 : WRITTEN;
    Py_DECREF(value);
    return result;
}

/* A finite float attribute, or None as null. */
static int write_float_attribute(Buffer *b, Readers *readers, PyObject *obj, int name)
{
    PyObject *value = get_attribute(readers, obj, name);
    if (value == NULL)
        return NOT_WRITTEN;
    int result = NOT_WRITTEN;
    if (value == Py_None)
        result = APPEND_LITERAL(b, "null") < 0 ? -1 : WRITTEN;
    else if (PyFloat_CheckExact(value) && isfinite(PyFloat_AS_DOUBLE(value))) {
        result = -1;
        if (reserve(b, NUMBER_MAX) == 0) {
            char *end = write_double(b->data + b->len, PyFloat_AS_DOUBLE(value));
            if (end != NULL) {
                b->len = (size_t)(end - b->data);
                result = WRITTEN;
            }
        }
    }
    Py_DECREF(value);
    return result;
}

/* The sweep's thresholds and their keys as written ("\"0.50\""), from image_rows' `sweep`. */
typedef struct {
    Py_ssize_t n;
    uint64_t *bits;
    const char **keys;
    Py_ssize_t *key_lengths;
} Sweep;

/* One sweep entry: a float threshold of the bits expected, and its counts. */
static int write_sweep_entry(Buffer *b, Readers *readers, PyObject *entry, const Sweep *sweep,
                             Py_ssize_t s)
{
    PyObject *threshold = get_attribute(readers, entry, A_THRESHOLD);
    if (threshold == NULL)
        return NOT_WRITTEN;
    int same = 0;
    if (PyFloat_CheckExact(threshold)) {
        double t = PyFloat_AS_DOUBLE(threshold);
        uint64_t bits;
        memcpy(&bits, &t, 8);
        same = bits == sweep->bits[s];
    }
    Py_DECREF(threshold);
    if (!same)
        return NOT_WRITTEN;
    if (s && APPEND_LITERAL(b, ", ") < 0)
        return -1;
    if (append(b, sweep->keys[s], (size_t)sweep->key_lengths[s]) < 0)
        return -1;
    static const Literal labels[3] = {
        LITERAL(": {\"tp\": "), LITERAL(", \"fp\": "), LITERAL(", \"fn\": "),
    };
    static const int names[3] = {A_TP, A_FP, A_FN};
    for (int k = 0; k < 3; k++) {
        if (append(b, labels[k].text, labels[k].length) < 0)
            return -1;
        int written = write_int_attribute(b, readers, entry, names[k]);
        if (written != WRITTEN)
            return written;
    }
    return APPEND_LITERAL(b, "}") < 0 ? -1 : WRITTEN;
}

static int write_sweep(Buffer *b, Readers *readers, PyObject *image, const Sweep *sweep)
{
    PyObject *entries = get_attribute(readers, image, A_SWEEP);
    if (entries == NULL)
        return NOT_WRITTEN;
    int result = NOT_WRITTEN;
    if (PyTuple_CheckExact(entries) && PyTuple_GET_SIZE(entries) == sweep->n) {
        result = APPEND_LITERAL(b, "{") < 0 ? -1 : WRITTEN;
        for (Py_ssize_t s = 0; s < sweep->n && result == WRITTEN; s++)
            result = write_sweep_entry(b, readers, PyTuple_GET_ITEM(entries, s), sweep, s);
        if (result == WRITTEN && APPEND_LITERAL(b, "}}") < 0)
            result = -1;
    }
    Py_DECREF(entries);
    return result;
}

/* One image's row, in the order of json_report._image's record. */
static int write_row(Buffer *b, Readers *readers, PyObject *image, const Sweep *sweep)
{
    static const Literal counts[7] = {
        LITERAL(", \"gt\": "), LITERAL(", \"gt_ignored\": "), LITERAL(", \"pred\": "),
        LITERAL(", \"pred_ignored\": "), LITERAL(", \"tp\": "), LITERAL(", \"fp\": "),
        LITERAL(", \"fn\": "),
    };
    static const int count_names[7] = {
        A_GT, A_GT_IGNORED, A_PRED, A_PRED_IGNORED, A_TP, A_FP, A_FN,
    };
    int written;
    if (APPEND_LITERAL(b, "{\"image\": ") < 0)
        return -1;
    if ((written = write_string_attribute(b, readers, image, A_KEY, 0)) != WRITTEN)
        return written;
    if (APPEND_LITERAL(b, ", \"gt_path\": ") < 0)
        return -1;
    if ((written = write_string_attribute(b, readers, image, A_GT_PATH, 0)) != WRITTEN)
        return written;
    if (APPEND_LITERAL(b, ", \"pred_path\": ") < 0)
        return -1;
    if ((written = write_string_attribute(b, readers, image, A_PRED_PATH, 1)) != WRITTEN)
        return written;
    for (int k = 0; k < 7; k++) {
        if (append(b, counts[k].text, counts[k].length) < 0)
            return -1;
        if ((written = write_int_attribute(b, readers, image, count_names[k])) != WRITTEN)
            return written;
    }
    if (APPEND_LITERAL(b, ", \"mean_iou\": ") < 0)
        return -1;
    if ((written = write_float_attribute(b, readers, image, A_MEAN_IOU)) != WRITTEN)
        return written;
    if (APPEND_LITERAL(b, ", \"sweep\": ") < 0)
        return -1;
    return write_sweep(b, readers, image, sweep);
}

/* An ASCII str's bytes, or NULL with an exception naming `what`. */
static const char *ascii_text(PyObject *text, Py_ssize_t *length, const char *what)
{
    if (!PyUnicode_Check(text) || PyUnicode_READY(text) < 0 || !PyUnicode_IS_ASCII(text)) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_TypeError, "image_rows: %s must be an ASCII str", what);
        return NULL;
    }
    *length = PyUnicode_GET_LENGTH(text);
    return (const char *)PyUnicode_DATA(text);
}

/* Reads image_rows' `sweep`: a tuple of (threshold, key text) pairs. */
static int read_sweep(PyObject *spec, Sweep *sweep)
{
    if (!PyTuple_Check(spec)) {
        PyErr_SetString(PyExc_TypeError, "image_rows: sweep must be a tuple");
        return -1;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(spec);
    sweep->n = n;
    sweep->bits = PyMem_Malloc(sizeof(uint64_t) * (size_t)(n + 1));
    sweep->keys = PyMem_Malloc(sizeof(char *) * (size_t)(n + 1));
    sweep->key_lengths = PyMem_Malloc(sizeof(Py_ssize_t) * (size_t)(n + 1));
    if (sweep->bits == NULL || sweep->keys == NULL || sweep->key_lengths == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t s = 0; s < n; s++) {
        PyObject *pair = PyTuple_GET_ITEM(spec, s);
        if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2 ||
            !PyFloat_Check(PyTuple_GET_ITEM(pair, 0))) {
            PyErr_SetString(PyExc_TypeError,
                            "image_rows: each sweep entry must be (float, str)");
            return -1;
        }
        double t = PyFloat_AS_DOUBLE(PyTuple_GET_ITEM(pair, 0));
        memcpy(&sweep->bits[s], &t, 8);
        sweep->keys[s] =
            ascii_text(PyTuple_GET_ITEM(pair, 1), &sweep->key_lengths[s], "a sweep key");
        if (sweep->keys[s] == NULL)
            return -1;
    }
    return 0;
}

/* The fallback's text of one image, appended. */
static int append_fallback(Buffer *b, PyObject *fallback, PyObject *image)
{
    PyObject *text = PyObject_CallOneArg(fallback, image);
    if (text == NULL)
        return -1;
    Py_ssize_t n;
    const char *data = ascii_text(text, &n, "the fallback's row");
    int result = data == NULL ? -1 : append(b, data, (size_t)n);
    Py_DECREF(text);
    return result;
}

/* image_rows(images, separator, sweep, fallback, /) -> bytes */
static PyObject *image_rows(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "image_rows expects 4 arguments");
        return NULL;
    }
    PyObject *fallback = args[3];
    Py_ssize_t separator_length;
    const char *separator = ascii_text(args[1], &separator_length, "separator");
    if (separator == NULL)
        return NULL;
    PyObject *images = PySequence_Fast(args[0], "image_rows: images must be a sequence");
    if (images == NULL)
        return NULL;
    Sweep sweep = {0, NULL, NULL, NULL};
    Buffer b = {NULL, NULL, 0, 0};
    Readers readers;
    memset(&readers, 0, sizeof readers);
    PyObject *result = NULL;
    if (read_sweep(args[2], &sweep) < 0)
        goto done;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(images);
    for (Py_ssize_t i = 0; i < n; i++) {
        /* The list can change under a fallback's call: read it again each time. */
        if (i >= PySequence_Fast_GET_SIZE(images))
            break;
        PyObject *image = PySequence_Fast_GET_ITEM(images, i);
        Py_INCREF(image);
        if (i && append(&b, separator, (size_t)separator_length) < 0) {
            Py_DECREF(image);
            goto done;
        }
        size_t start = b.len;
        int written = write_row(&b, &readers, image, &sweep);
        if (written == NOT_WRITTEN) {
            b.len = start;
            written = append_fallback(&b, fallback, image) < 0 ? -1 : WRITTEN;
        }
        Py_DECREF(image);
        if (written < 0)
            goto done;
    }
    if (b.text == NULL)
        result = PyBytes_FromStringAndSize(NULL, 0);
    else if (_PyBytes_Resize(&b.text, (Py_ssize_t)b.len) == 0) {
        result = b.text;
        b.text = NULL;
    }
done:
    release_readers(&readers);
    Py_XDECREF(b.text);
    PyMem_Free(sweep.bits);
    PyMem_Free(sweep.keys);
    PyMem_Free(sweep.key_lengths);
    Py_DECREF(images);
    return result;
}

static PyMethodDef methods[] = {
    {"float_list", float_list, METH_O,
     "float_list(values, /)\n--\n\nA float64 buffer as json.dumps(values.tolist()) writes it, as ASCII bytes."},
    {"image_rows", (PyCFunction)(void (*)(void))image_rows, METH_FASTCALL,
     "image_rows(images, separator, sweep, fallback, /)\n--\n\n"
     "Each image's JSON row, joined by separator, as ASCII bytes."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "fastjson", "The compiled JSON number lists and image rows.", -1,
    methods,
};

PyMODINIT_FUNC PyInit_fastjson(void)
{
    for (int a = 0; a < A_COUNT; a++) {
        if (attribute[a] == NULL)
            attribute[a] = PyUnicode_InternFromString(ATTRIBUTE_NAMES[a]);
        if (attribute[a] == NULL)
            return NULL;
    }
    return PyModule_Create(&module);
}
