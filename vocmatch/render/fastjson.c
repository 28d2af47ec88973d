/* The compiled JSON number lists: a float64 array as the text json.dumps gives its list
 * (allow_nan=False): "[a, b, c]", ", " between numbers, each number float.__repr__'s text.
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
#include <string.h>

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
    char text[20];
    int n = 0;
    for (uint64_t r = d; r; r /= 10)
        text[19 - n++] = (char)('0' + r % 10);
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

/* Each number takes at most 24 characters ("-2.2250738585072014e-308"), then ", ". */
#define NUMBER_MAX 26

/* float_list(values, /) -> str */
static PyObject *float_list(PyObject *self, PyObject *arg)
{
    (void)self;
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        return NULL;
    const char *f = view.format ? view.format : "B";
    if (*f == '<' || *f == '=' || *f == '@')
        f++;
    if (*f != 'd' || f[1] != '\0' || view.itemsize != 8) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_TypeError, "float_list: expected a contiguous float64 buffer");
        return NULL;
    }
    const double *values = (const double *)view.buf;
    Py_ssize_t n = view.len / 8;
    if (n > (PY_SSIZE_T_MAX - 2) / NUMBER_MAX) {
        PyBuffer_Release(&view);
        return PyErr_NoMemory();
    }
    char *out = PyMem_Malloc((size_t)n * NUMBER_MAX + 2);
    if (out == NULL) {
        PyBuffer_Release(&view);
        return PyErr_NoMemory();
    }
    char *p = out;
    *p++ = '[';
    for (Py_ssize_t i = 0; i < n; i++) {
        double x = values[i];
        uint64_t bits;
        memcpy(&bits, &x, 8);
        if (((bits >> 52) & 0x7ff) == 0x7ff) {
            PyMem_Free(out);
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
            PyMem_Free(out);
            PyBuffer_Release(&view);
            return NULL;
        }
    }
    *p++ = ']';
    PyBuffer_Release(&view);
    PyObject *result = PyUnicode_DecodeASCII(out, p - out, NULL);
    PyMem_Free(out);
    return result;
}

static PyMethodDef methods[] = {
    {"float_list", float_list, METH_O,
     "float_list(values, /)\n--\n\nA float64 buffer as json.dumps(values.tolist()) writes it."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "fastjson", "The compiled JSON number lists.", -1, methods,
};

PyMODINIT_FUNC PyInit_fastjson(void) { return PyModule_Create(&module); }
