/* The compiled fast reader: a pass over a file's bytes to check them, one to read its
 * elements (an object of the layout of one read before by that layout: see Layout), the
 * same columns out as the pure-Python fast reader (vocmatch/readers/scan.py), for the same
 * strict subset of XML.
 *
 * It reads only files it can prove the parser (lxml) reads the same way, and returns None
 * for any other, which vocmatch.readers.scan then hands to the parser:
 *   - bytes: valid UTF-8 without control characters, U+FFFE or U+FFFF, no '&' (so no
 *     entity or character reference) and no "]]>";
 *   - an optional declaration <?xml version="1.0" [encoding="utf-8"] [standalone=".."]?>,
 *     XML whitespace, the root <annotation> (LabelImg's verified="yes|no" allowed), plain
 *     tags only (no attribute, namespace, comment, CDATA, processing instruction or
 *     self-closing tag), well nested, at most MAX_DEPTH deep;
 *   - header children before the first <object>, then <object> elements with text only
 *     between them, then whitespace, </annotation> and whitespace to the end (or, in a file
 *     without objects, the header children, </annotation> and whitespace to the end);
 *   - in each object the parser's fields: the first <name>, <bndbox> (and its first <xmin>,
 *     <ymin>, <xmax>, <ymax>), <truncated>, <difficult>, <occluded>, <pose>, and <score>
 *     (else <confidence>), each a leaf; no <robndbox>, <polygon> or nested <object>;
 *   - numbers in the annotation grammar (vocmatch/core/numbers.py), finite, coordinates
 *     within max_coordinate with xmax >= xmin and ymax >= ymin; flags 0, 1 or empty
 *     (<occluded> also true/false/yes/no in any case).
 *
 * Safety: every access is checked against the buffer's length; the only allocations are
 * the output columns (growing with the objects read, each of which takes at least 90 bytes
 * of input) and, for a number too long for a stack buffer, a copy of that number.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <float.h>
#include <stdlib.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

/* SSE2 (every x86-64 processor, and MSVC's x64 target) checks 16 bytes at once where the
 * bytes are plain; VOCMATCH_NO_SIMD builds the byte-by-byte loop alone (to test it). */
#if !defined(VOCMATCH_NO_SIMD) && (defined(__SSE2__) || defined(_M_X64) || \
                                   (defined(_M_IX86_FP) && _M_IX86_FP >= 2))
#include <emmintrin.h>
#define VOCMATCH_SSE2 1
#else
#define VOCMATCH_SSE2 0
#endif

#define MAX_DEPTH 64
#define NAME_CACHE 64 /* a power of two */
#define SHORT_NUMBER 64
/* A chunk's files are read in batches of at most BATCH_FILES files, whose bytes fill at
 * most BATCH_BYTES (or one larger file) of one buffer. The GIL is released once for the
 * batches read until the texts they keep for their Python objects (each distinct name and
 * pose, and the headers' texts, copied out of the buffer after each batch into blocks of
 * TEXT_BLOCK bytes; each object keeps the place of its name and pose among the distinct
 * texts) pass KEEP_TEXTS, or the chunk ends, and taken once to make those objects: a chunk
 * of usual files takes it back once a call, so that another thread running bytecode holds
 * its reading back once, not once a batch; and a distinct text is looked up in Python's
 * tables once. (read_chunk_kept, whose files' bytes are kept as they are added, takes it
 * back once a batch.) */
#define BATCH_FILES 256
#define BATCH_BYTES (1 << 20)
#define TEXT_BLOCK (64 << 10)
#define KEEP_TEXTS (16 << 20)

typedef unsigned char u8;

typedef struct {
    const u8 *p;
    Py_ssize_t n;
} Span;

enum { ABSENT = 0, LEAF = 1, NESTED = 2 };

typedef struct {
    int state;
    Span text;
} Field;

/* --- bytes ------------------------------------------------------------------------ */

/* Byte classes of the validating pass: 0 plain ASCII, 1 refused, 2 ']', 3 start of a
 * multi-byte UTF-8 sequence (or an invalid byte, refused by the sequence check). */
static u8 byte_class[256];

static void init_byte_class(void)
{
    for (int c = 0; c < 256; c++) {
        u8 k = 0;
        if (c < 0x20 && c != '\t' && c != '\n' && c != '\r')
            k = 1;
        else if (c == '&')
            k = 1;
        else if (c == ']')
            k = 2;
        else if (c >= 0x80)
            k = 3;
        byte_class[c] = k;
    }
}

/* The index of the lowest set bit of a nonzero mask. */
static int lowest_bit(unsigned int mask)
{
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_ctz(mask);
#else
    int k = 0;
    while (!(mask & 1u)) {
        mask >>= 1;
        k++;
    }
    return k;
#endif
}

#if VOCMATCH_SSE2
/* The bytes of 16 that are not of class 0 (plain ASCII), as a vector of 0xFF. */
static inline __m128i unplain_vector(__m128i v)
{
    const __m128i space = _mm_set1_epi8(0x20), tab = _mm_set1_epi8('\t');
    const __m128i newline = _mm_set1_epi8('\n'), carriage = _mm_set1_epi8('\r');
    const __m128i amp = _mm_set1_epi8('&'), bracket = _mm_set1_epi8(']');
    /* Signed: below 0x20, or 0x80 and above (negative). */
    __m128i low = _mm_cmplt_epi8(v, space);
    __m128i blank = _mm_or_si128(_mm_cmpeq_epi8(v, tab),
                                 _mm_or_si128(_mm_cmpeq_epi8(v, newline),
                                              _mm_cmpeq_epi8(v, carriage)));
    __m128i other = _mm_or_si128(_mm_cmpeq_epi8(v, amp), _mm_cmpeq_epi8(v, bracket));
    return _mm_or_si128(_mm_andnot_si128(blank, low), other);
}

static inline __m128i unplain16(const u8 *p)
{
    return unplain_vector(_mm_loadu_si128((const __m128i *)(const void *)p));
}
#endif

/* The first byte at or after i that is not of class 0 (plain ASCII), or n. Where SSE2 is
 * there (every x86-64 processor), 64 bytes are checked at once (one branch for the four
 * vectors of 16: the bytes of a file are nearly all plain), then 16 at once; the table
 * decides the rest. */
static Py_ssize_t skip_plain(const u8 *s, Py_ssize_t n, Py_ssize_t i)
{
#if VOCMATCH_SSE2
    while (n - i >= 64) {
        const u8 *p = s + i;
        __m128i any = _mm_or_si128(_mm_or_si128(unplain16(p), unplain16(p + 16)),
                                   _mm_or_si128(unplain16(p + 32), unplain16(p + 48)));
        if (_mm_movemask_epi8(any) != 0)
            break; /* the vectors of 16 below find which byte */
        i += 64;
    }
    while (n - i >= 16) {
        int mask = _mm_movemask_epi8(unplain16(s + i));
        if (mask != 0)
            return i + lowest_bit((unsigned int)mask);
        i += 16;
    }
#endif
    while (i < n && byte_class[s[i]] == 0)
        i++;
    return i;
}

/* 1 if the bytes from i to stop are valid UTF-8 holding only XML 1.0 characters, no '&'
 * and no "]]>": a sequence or "]]>" starting before stop is checked whole, with the bytes
 * after stop (to n) that it takes. */
static int plain_range(const u8 *s, Py_ssize_t n, Py_ssize_t i, Py_ssize_t stop)
{
    while (i < stop) {
        i = skip_plain(s, stop, i);
        if (i >= stop)
            break;
        u8 c = s[i];
        switch (byte_class[c]) {
        case 1:
            return 0;
        case 2:
            if (i + 2 < n && s[i + 1] == ']' && s[i + 2] == '>')
                return 0;
            i++;
            continue;
        default:
            break;
        }
        if (c >= 0xC2 && c <= 0xDF) {
            if (i + 1 >= n || (s[i + 1] & 0xC0) != 0x80)
                return 0;
            i += 2;
        } else if (c >= 0xE0 && c <= 0xEF) {
            if (i + 2 >= n)
                return 0;
            u8 c1 = s[i + 1], c2 = s[i + 2];
            if ((c1 & 0xC0) != 0x80 || (c2 & 0xC0) != 0x80)
                return 0;
            if (c == 0xE0 && c1 < 0xA0)
                return 0; /* overlong */
            if (c == 0xED && c1 >= 0xA0)
                return 0; /* a surrogate */
            if (c == 0xEF && c1 == 0xBF && (c2 == 0xBE || c2 == 0xBF))
                return 0; /* U+FFFE, U+FFFF: not XML characters */
            i += 3;
        } else if (c >= 0xF0 && c <= 0xF4) {
            if (i + 3 >= n)
                return 0;
            u8 c1 = s[i + 1];
            if ((c1 & 0xC0) != 0x80 || (s[i + 2] & 0xC0) != 0x80 || (s[i + 3] & 0xC0) != 0x80)
                return 0;
            if (c == 0xF0 && c1 < 0x90)
                return 0; /* overlong */
            if (c == 0xF4 && c1 >= 0x90)
                return 0; /* above U+10FFFF */
            i += 4;
        } else {
            return 0;
        }
    }
    return 1;
}

static int is_space(u8 c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }
static int is_digit(u8 c) { return c >= '0' && c <= '9'; }

/* Tag-name bytes: NAME_START for a name's first byte (a letter or '_'), NAME_CHAR for any
 * of its bytes (those and digits, '.', '-'). */
enum { NAME_START = 1, NAME_CHAR = 2 };
static u8 name_class[256];

static void init_name_class(void)
{
    for (int c = 0; c < 256; c++) {
        int letter = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
        int other = (c >= '0' && c <= '9') || c == '.' || c == '-';
        name_class[c] = (u8)(letter ? NAME_START | NAME_CHAR : other ? NAME_CHAR : 0);
    }
}

static Span trim(Span t)
{
    while (t.n > 0 && is_space(t.p[0])) {
        t.p++;
        t.n--;
    }
    while (t.n > 0 && is_space(t.p[t.n - 1]))
        t.n--;
    return t;
}

/* 1 if n bytes are the same (names are short: a loop the compiler unrolls for a literal). */
static int same_bytes(const u8 *a, const u8 *b, Py_ssize_t n)
{
    for (Py_ssize_t i = 0; i < n; i++)
        if (a[i] != b[i])
            return 0;
    return 1;
}

#define SPAN_IS(t, literal)                   \
    ((t).n == (Py_ssize_t)sizeof(literal) - 1 && \
     same_bytes((t).p, (const u8 *)(literal), (Py_ssize_t)sizeof(literal) - 1))

static int span_is(Span t, const char *literal)
{
    size_t n = strlen(literal);
    return (size_t)t.n == n && memcmp(t.p, literal, n) == 0;
}

static int span_equal(Span a, Span b) { return a.n == b.n && same_bytes(a.p, b.p, a.n); }

/* ASCII case-insensitive comparison with a lower-case literal. */
static int span_is_word(Span t, const char *literal)
{
    size_t n = strlen(literal);
    if ((size_t)t.n != n)
        return 0;
    for (size_t i = 0; i < n; i++) {
        u8 c = t.p[i];
        if (c >= 'A' && c <= 'Z')
            c = (u8)(c + 32);
        if (c != (u8)literal[i])
            return 0;
    }
    return 1;
}

/* --- tags ------------------------------------------------------------------------- */

typedef struct {
    int closing;
    Span name;
    Py_ssize_t end; /* index after '>' */
} Tag;

/* The plain tag starting at s[pos] == '<' ("<name>" or "</name>"), or 0 for any other
 * markup. */
static int read_tag(const u8 *s, Py_ssize_t n, Py_ssize_t pos, Tag *tag)
{
    Py_ssize_t i = pos + 1;
    tag->closing = 0;
    if (i < n && s[i] == '/') {
        tag->closing = 1;
        i++;
    }
    if (i >= n || !(name_class[s[i]] & NAME_START))
        return 0;
    Py_ssize_t start = i++;
    while (i < n && (name_class[s[i]] & NAME_CHAR))
        i++;
    if (i >= n || s[i] != '>')
        return 0;
    tag->name.p = s + start;
    tag->name.n = i - start;
    tag->end = i + 1;
    return 1;
}

/* The index of the first '<' at or after pos, or -1. The text between tags is mostly a
 * few bytes (indentation, a number): 16 bytes are looked at at once (SSE2) or one by one,
 * and memchr takes over after them. */
static Py_ssize_t find_open(const u8 *s, Py_ssize_t n, Py_ssize_t pos)
{
#if VOCMATCH_SSE2
    if (n - pos >= 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(s + pos));
        int mask = _mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8('<')));
        if (mask != 0)
            return pos + lowest_bit((unsigned int)mask);
        pos += 16;
    }
#else
    for (Py_ssize_t stop = n - pos > 16 ? pos + 16 : n; pos < stop; pos++)
        if (s[pos] == '<')
            return pos;
#endif
    if (pos >= n)
        return -1;
    const u8 *lt = memchr(s + pos, '<', (size_t)(n - pos));
    return lt == NULL ? -1 : lt - s;
}

/* The next plain tag at or after pos; 0 at the end of the bytes or at other markup. */
static int next_tag(const u8 *s, Py_ssize_t n, Py_ssize_t pos, Py_ssize_t *at, Tag *tag)
{
    Py_ssize_t lt = find_open(s, n, pos);
    if (lt < 0)
        return 0;
    *at = lt;
    return read_tag(s, n, lt, tag);
}

/* After an element's start tag: 1 and its text if the next tag is its end tag (a leaf),
 * 0 if the next tag opens a child, -1 for anything else (another end tag, other markup). */
static int leaf_text(const u8 *s, Py_ssize_t n, const Tag *open, Span *text, Py_ssize_t *end)
{
    Py_ssize_t at = find_open(s, n, open->end);
    if (at < 0)
        return -1;
    /* "</" the same name ">": the end tag read_tag would read (the name is a valid one). */
    Py_ssize_t len = open->name.n;
    if (n - at > len + 2 && s[at + 1] == '/' && s[at + 2 + len] == '>' &&
        same_bytes(s + at + 2, open->name.p, len)) {
        text->p = s + open->end;
        text->n = at - open->end;
        *end = at + 3 + len;
        return 1;
    }
    Tag next;
    if (!read_tag(s, n, at, &next) || next.closing)
        return -1; /* other markup, or another element's end tag */
    return 0;
}

/* The first occurrence of a field: its text if a leaf; NESTED if it has children. */
static void first_field(Field *field, int leaf, Span text)
{
    if (field->state != ABSENT)
        return;
    field->state = leaf ? LEAF : NESTED;
    field->text = text;
}

/* --- the XML declaration ---------------------------------------------------------- */

static Py_ssize_t skip_space(const u8 *s, Py_ssize_t n, Py_ssize_t i)
{
    while (i < n && is_space(s[i]))
        i++;
    return i;
}

/* One pseudo-attribute ' name="value"' (or single quotes) at i: its value, and the index
 * after it; 0 if not there. At least one space comes before the name. */
static int pseudo_attribute(const u8 *s, Py_ssize_t n, Py_ssize_t i, const char *name,
                            Span *value, Py_ssize_t *after)
{
    Py_ssize_t j = skip_space(s, n, i);
    size_t len = strlen(name);
    if (j == i || (size_t)(n - j) < len || memcmp(s + j, name, len) != 0)
        return 0;
    j = skip_space(s, n, j + (Py_ssize_t)len);
    if (j >= n || s[j] != '=')
        return 0;
    j = skip_space(s, n, j + 1);
    if (j >= n || (s[j] != '"' && s[j] != '\''))
        return 0;
    u8 quote = s[j];
    Py_ssize_t start = ++j;
    while (j < n && s[j] != quote && s[j] != '<' && s[j] != '>')
        j++;
    if (j >= n || s[j] != quote)
        return 0;
    value->p = s + start;
    value->n = j - start;
    *after = j + 1;
    return 1;
}

/* Where the document's content starts: after the declaration, or 0 without one; -1 for a
 * declaration other than version 1.0 with an optional UTF-8 encoding and standalone. */
static Py_ssize_t after_declaration(const u8 *s, Py_ssize_t n)
{
    if (n < 6 || memcmp(s, "<?xml", 5) != 0 || !is_space(s[5]))
        return 0; /* no declaration (or '<?xml-...': a processing instruction, refused later) */
    Span value;
    Py_ssize_t i = 5, after;
    if (!pseudo_attribute(s, n, i, "version", &value, &after) || !span_is(value, "1.0"))
        return -1;
    i = after;
    if (pseudo_attribute(s, n, i, "encoding", &value, &after)) {
        if (!span_is_word(value, "utf-8") && !span_is_word(value, "utf8"))
            return -1;
        i = after;
    }
    if (pseudo_attribute(s, n, i, "standalone", &value, &after)) {
        if (!span_is(value, "yes") && !span_is(value, "no"))
            return -1;
        i = after;
    }
    i = skip_space(s, n, i);
    if (i + 1 >= n || s[i] != '?' || s[i + 1] != '>')
        return -1;
    return i + 2;
}

/* --- numbers and flags ------------------------------------------------------------ */

/* Fewer digits than this make a mantissa below 2**53: an exact double. */
#define EXACT_NUMBER_DIGITS 16

static const double powers_of_ten[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                       1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                       1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* The usual number first: up to 15 digits with at most one point, nothing around them
 * (a box's corner, a score), read inline: 1 read, 0 for any other text (read_number
 * decides). It is what read_number's general path reads to the same double: fewer than 16
 * digits make a mantissa below 2**53, and the point at most 15 places from the end a power
 * of ten within 10**22 (value / 10**fraction, one correctly rounded division). */
static inline int plain_number(Span text, double *out)
{
#if defined(FLT_EVAL_METHOD) && FLT_EVAL_METHOD == 0
    if (text.n > 0 && text.n <= 16 && is_digit(text.p[0])) {
        uint64_t mantissa = 0;
        Py_ssize_t i = 0, point = -1;
        for (; i < text.n; i++) {
            unsigned int digit = (unsigned int)text.p[i] - '0';
            if (digit < 10)
                mantissa = mantissa * 10 + digit;
            else if (text.p[i] == '.' && point < 0)
                point = i;
            else
                break;
        }
        if (i == text.n && text.n - (point >= 0) < EXACT_NUMBER_DIGITS) {
            int fraction = point >= 0 ? (int)(text.n - 1 - point) : 0;
            double value = (double)mantissa;
            *out = fraction > 0 ? value / powers_of_ten[fraction] : value;
            return 1;
        }
    }
#else
    (void)text;
    (void)out;
#endif
    return 0;
}

/* A number's value by the one grammar (surrounding XML whitespace, an optional sign,
 * digits with at most one point and at least one digit, an optional exponent):
 * 1 read, 0 not in the grammar, -1 out of memory (no exception set). The value is
 * float()'s: exact when the digits and the power of ten are both exact doubles (one
 * correctly rounded multiplication or division), else Python's own correctly rounded
 * conversion. `released` is NULL when the caller holds the GIL, else the thread state
 * the caller saved on releasing it: the GIL is then taken for Python's conversion only. */
static int read_number(Span text, double *out, PyThreadState **released)
{
    if (plain_number(text, out))
        return 1;
    Span t = trim(text);
    const u8 *p = t.p;
    Py_ssize_t n = t.n, i = 0;
    int negative = 0;
    if (i < n && (p[i] == '+' || p[i] == '-')) {
        negative = p[i] == '-';
        i++;
    }
    uint64_t mantissa = 0;
    int digits = 0, fraction = 0;
    while (i < n && is_digit(p[i])) {
        if (digits < 19)
            mantissa = mantissa * 10 + (uint64_t)(p[i] - '0');
        digits++;
        i++;
    }
    if (i < n && p[i] == '.') {
        i++;
        while (i < n && is_digit(p[i])) {
            if (digits < 19)
                mantissa = mantissa * 10 + (uint64_t)(p[i] - '0');
            digits++;
            fraction++;
            i++;
        }
    }
    if (digits == 0)
        return 0;
    long exponent = 0;
    int exponent_small = 1;
    if (i < n && (p[i] == 'e' || p[i] == 'E')) {
        i++;
        int exponent_negative = 0;
        if (i < n && (p[i] == '+' || p[i] == '-')) {
            exponent_negative = p[i] == '-';
            i++;
        }
        if (i >= n || !is_digit(p[i]))
            return 0;
        while (i < n && is_digit(p[i])) {
            if (exponent < 100000)
                exponent = exponent * 10 + (p[i] - '0');
            else
                exponent_small = 0;
            i++;
        }
        if (exponent_negative)
            exponent = -exponent;
    }
    if (i != n)
        return 0;
#if defined(FLT_EVAL_METHOD) && FLT_EVAL_METHOD == 0
    long power = exponent - fraction;
    if (digits <= 19 && exponent_small && mantissa <= ((uint64_t)1 << 53) && power >= -22 &&
        power <= 22) {
        double value = (double)mantissa;
        value = power >= 0 ? value * powers_of_ten[power] : value / powers_of_ten[-power];
        *out = negative ? -value : value;
        return 1;
    }
#else
    (void)exponent_small;
    (void)fraction;
#endif
    /* The general case: Python's conversion on a NUL-terminated copy of the text (malloc:
     * the copy may be made without the GIL). */
    char small[SHORT_NUMBER];
    char *copy = small;
    if (n >= SHORT_NUMBER) {
        copy = malloc((size_t)n + 1);
        if (copy == NULL)
            return -1;
    }
    memcpy(copy, p, (size_t)n);
    copy[n] = '\0';
    if (released != NULL)
        PyEval_RestoreThread(*released);
    char *end = NULL;
    double value = PyOS_string_to_double(copy, &end, NULL);
    int ok = 1;
    if (value == -1.0 && PyErr_Occurred()) {
        PyErr_Clear();
        ok = 0;
    } else if (end != copy + n) {
        ok = 0;
    }
    if (released != NULL)
        *released = PyEval_SaveThread();
    if (copy != small)
        free(copy);
    if (ok)
        *out = value;
    return ok;
}

/* A flag as the parser reads it (absent, empty or 0: false; 1: true); with words, also
 * true/false/yes/no in any case (<occluded>). 0 for any other text: the parser decides. */
static int read_flag(const Field *field, int words, u8 *out)
{
    if (field->state == ABSENT) {
        *out = 0;
        return 1;
    }
    if (field->text.n == 1 && (field->text.p[0] == '0' || field->text.p[0] == '1')) {
        *out = field->text.p[0] == '1'; /* the usual text: one digit, nothing around it */
        return 1;
    }
    Span t = trim(field->text);
    if (t.n == 0 || span_is(t, "0")) {
        *out = 0;
        return 1;
    }
    if (span_is(t, "1")) {
        *out = 1;
        return 1;
    }
    if (words) {
        if (span_is_word(t, "true") || span_is_word(t, "yes")) {
            *out = 1;
            return 1;
        }
        if (span_is_word(t, "false") || span_is_word(t, "no")) {
            *out = 0;
            return 1;
        }
    }
    return 0;
}

/* --- output columns --------------------------------------------------------------- */

typedef struct {
    char *p;
    size_t len, cap;
} Column;

/* Columns are grown with realloc, not PyMem_Realloc: a chunk's are filled without the
 * GIL. 1 added, 0 out of memory (no exception set: the caller sets it, holding the GIL). */
static int column_add(Column *c, const void *item, size_t size)
{
    if (c->len + size > c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 256;
        while (cap < c->len + size)
            cap *= 2;
        char *grown = realloc(c->p, cap);
        if (grown == NULL)
            return 0;
        c->p = grown;
        c->cap = cap;
    }
    memcpy(c->p + c->len, item, size);
    c->len += size;
    return 1;
}

static PyObject *column_bytes(const Column *c)
{
    return PyBytes_FromStringAndSize(c->len ? c->p : "", (Py_ssize_t)c->len);
}

/* Names and poses repeat: one bytes object per distinct text in a small cache. */
typedef struct {
    PyObject *slot[NAME_CACHE];
} Cache;

static PyObject *cached_bytes(Cache *cache, Span t)
{
    uint32_t h = 2166136261u;
    for (Py_ssize_t i = 0; i < t.n; i++)
        h = (h ^ t.p[i]) * 16777619u;
    PyObject **slot = &cache->slot[h & (NAME_CACHE - 1)];
    if (*slot != NULL && PyBytes_GET_SIZE(*slot) == t.n &&
        memcmp(PyBytes_AS_STRING(*slot), t.p, (size_t)t.n) == 0) {
        Py_INCREF(*slot);
        return *slot;
    }
    PyObject *text = PyBytes_FromStringAndSize((const char *)t.p, t.n);
    if (text == NULL)
        return NULL;
    Py_XSETREF(*slot, text);
    Py_INCREF(text);
    return text;
}

static void cache_clear(Cache *cache)
{
    for (int i = 0; i < NAME_CACHE; i++)
        Py_CLEAR(cache->slot[i]);
}

/* The columns read: a file's (scan) or a chunk's (read_chunk). Each object's <name> and
 * <pose> are kept as spans into the bytes read (a pose's n is -1 where absent) until the
 * file is known to be plain. */
typedef struct {
    Column coordinates, scores, difficult, truncated, occluded;
    Column names, poses; /* Span each */
    double max_coordinate;
    PyThreadState **released; /* while the GIL is released: the saved thread state */
} Output;

/* --- objects ---------------------------------------------------------------------- */

enum { F_NAME, F_TRUNCATED, F_DIFFICULT, F_OCCLUDED, F_POSE, F_SCORE, F_CONFIDENCE, F_COUNT };
enum { F_BNDBOX = F_COUNT, F_SHAPE, F_OTHER };


/* Which of an object's children a tag name is (a switch on the length: this runs for
 * every child of every object). */
static int object_child(Span t)
{
    switch (t.n) {
    case 4:
        return SPAN_IS(t, "name") ? F_NAME : SPAN_IS(t, "pose") ? F_POSE : F_OTHER;
    case 5:
        return SPAN_IS(t, "score") ? F_SCORE : F_OTHER;
    case 6:
        return SPAN_IS(t, "bndbox") ? F_BNDBOX : F_OTHER;
    case 7:
        return SPAN_IS(t, "polygon") ? F_SHAPE : F_OTHER;
    case 8:
        return SPAN_IS(t, "occluded") ? F_OCCLUDED : SPAN_IS(t, "robndbox") ? F_SHAPE : F_OTHER;
    case 9:
        return SPAN_IS(t, "truncated")   ? F_TRUNCATED
               : SPAN_IS(t, "difficult") ? F_DIFFICULT
                                         : F_OTHER;
    case 10:
        return SPAN_IS(t, "confidence") ? F_CONFIDENCE : F_OTHER;
    default:
        return F_OTHER;
    }
}

/* Which corner a <bndbox> child is: 0 to 3 for xmin, ymin, xmax, ymax, else -1. */
static int corner(Span t)
{
    if (t.n != 4 || (t.p[0] != 'x' && t.p[0] != 'y'))
        return -1;
    int y = t.p[0] == 'y';
    if (memcmp(t.p + 1, "min", 3) == 0)
        return y;
    if (memcmp(t.p + 1, "max", 3) == 0)
        return 2 + y;
    return -1;
}

/* The bytes between the texts of an object's leaves (its tags and the text around them)
 * and which field each text is: the layout of an object the full scan read, by which the
 * file's next object is read. Every tag the full scan meets lies in these bytes, and it
 * decides on the bytes of tags alone (a text is found as the bytes up to the next '<'):
 * an object whose bytes are the same segments with other texts, none holding '<', is read
 * by the full scan to the same fields, with its own texts. Each object of a file written
 * by one tool is mostly its predecessor's layout with other texts (or, taking turns, the
 * layout of the one before it). */
#define LAYOUT_TEXTS 32

typedef struct {
    int texts;                        /* the texts, -1 without a layout */
    Span segments[LAYOUT_TEXTS + 1];  /* before each text, and after the last one */
    signed char role[LAYOUT_TEXTS];   /* each text's field: F_*, F_COUNT + corner, -1 none */
    Field fields[F_COUNT], corners[4]; /* the fields' states */
} Layout;

/* Append an object's row from its fields: 1 read, 0 the parser's, -1 an error. */
static int add_object(const Field *fields, const Field *corners, Output *out)
{
    if (fields[F_NAME].state != LEAF)
        return 0;
    for (int f = F_TRUNCATED; f <= F_POSE; f++)
        if (fields[f].state == NESTED)
            return 0;
    const Field *score = fields[F_SCORE].state != ABSENT ? &fields[F_SCORE] : &fields[F_CONFIDENCE];
    if (score->state == NESTED)
        return 0;
    double box[4];
    for (int f = 0; f < 4; f++) {
        if (corners[f].state != LEAF)
            return 0;
        int read = plain_number(corners[f].text, &box[f])
                       ? 1
                       : read_number(corners[f].text, &box[f], out->released);
        if (read <= 0)
            return read;
        if (!(fabs(box[f]) <= out->max_coordinate))
            return 0;
    }
    if (!(box[2] >= box[0]) || !(box[3] >= box[1]))
        return 0;
    double value = Py_NAN;
    if (score->state == LEAF) {
        int read = plain_number(score->text, &value)
                       ? 1
                       : read_number(score->text, &value, out->released);
        if (read <= 0)
            return read;
        if (!isfinite(value))
            return 0;
    }
    u8 difficult, truncated, occluded;
    if (!read_flag(&fields[F_DIFFICULT], 0, &difficult) ||
        !read_flag(&fields[F_TRUNCATED], 0, &truncated) ||
        !read_flag(&fields[F_OCCLUDED], 1, &occluded))
        return 0;

    if (!column_add(&out->coordinates, box, sizeof box) ||
        !column_add(&out->scores, &value, sizeof value) ||
        !column_add(&out->difficult, &difficult, 1) ||
        !column_add(&out->truncated, &truncated, 1) || !column_add(&out->occluded, &occluded, 1))
        return -1;
    Span pose = {NULL, -1};
    if (fields[F_POSE].state == LEAF)
        pose = fields[F_POSE].text;
    if (!column_add(&out->names, &fields[F_NAME].text, sizeof(Span)) ||
        !column_add(&out->poses, &pose, sizeof pose))
        return -1;
    return 1;
}

/* Read one object from its start tag (`open`, whose '<' is at s[start]) to its end tag,
 * append its row to the output, set *end after it and its layout in *layout (texts -1 if
 * it has too many). 1 read, 0 the parser's, -1 an error. */
static int read_object(const u8 *s, Py_ssize_t n, Py_ssize_t start, const Tag *open,
                       Output *out, Py_ssize_t *end, Layout *layout)
{
    Field fields[F_COUNT];
    Field corners[4];
    memset(fields, 0, sizeof fields);
    memset(corners, 0, sizeof corners);
    Span stack[MAX_DEPTH];
    int depth = 1;
    stack[0] = open->name;
    int bndbox_seen = 0, in_bndbox = 0;
    Py_ssize_t pos = open->end, at;
    Py_ssize_t mark = start; /* where the layout's next segment starts */
    int texts = 0;
    Tag tag;
    for (;;) {
        if (!next_tag(s, n, pos, &at, &tag))
            return 0;
        if (tag.closing) {
            if (!span_equal(tag.name, stack[depth - 1]))
                return 0;
            if (depth == 2 && in_bndbox)
                in_bndbox = 0;
            pos = tag.end;
            if (--depth == 0)
                break;
            continue;
        }
        if (SPAN_IS(tag.name, "object"))
            return 0;
        Span text = {NULL, 0};
        Py_ssize_t after = 0;
        int leaf = leaf_text(s, n, &tag, &text, &after);
        if (leaf < 0)
            return 0;
        Field *field = NULL;
        int role = -1;
        if (depth == 1) {
            int child = object_child(tag.name);
            if (child == F_SHAPE)
                return 0; /* a shape: exact region overlap, the parser's */
            if (child < F_COUNT) {
                field = &fields[child];
                role = child;
            }
            if (child == F_BNDBOX && !bndbox_seen) {
                bndbox_seen = 1;
                in_bndbox = !leaf;
            }
        } else if (depth == 2 && in_bndbox) {
            int which = corner(tag.name);
            if (which >= 0) {
                field = &corners[which];
                role = F_COUNT + which;
            }
        }
        if (field != NULL && field->state != ABSENT)
            role = -1; /* not the first: the field keeps its text */
        if (field != NULL)
            first_field(field, leaf, text);
        if (leaf) {
            if (texts < LAYOUT_TEXTS) {
                layout->segments[texts].p = s + mark;
                layout->segments[texts].n = (text.p - s) - mark;
                layout->role[texts] = (signed char)role;
            }
            texts++;
            mark = (text.p - s) + text.n;
            pos = after;
        } else {
            if (depth >= MAX_DEPTH)
                return 0;
            stack[depth++] = tag.name;
            pos = tag.end;
        }
    }
    /* Its bytes are checked once its end is known (read_file checks the bytes around the
     * objects); those of a later object read by this layout are the same segments, and
     * only its texts are checked (read_like). */
    if (!plain_range(s, n, start, pos))
        return 0;
    *end = pos;
    layout->texts = texts <= LAYOUT_TEXTS ? texts : -1;
    layout->segments[texts <= LAYOUT_TEXTS ? texts : 0].p = s + mark;
    layout->segments[texts <= LAYOUT_TEXTS ? texts : 0].n = pos - mark;
    memcpy(layout->fields, fields, sizeof fields);
    memcpy(layout->corners, corners, sizeof corners);
    return add_object(fields, corners, out);
}

/* The end of a text (the index of the next '<') if its bytes are plain (as plain_range
 * checks them), else -1. A text is mostly a few bytes: where 16 bytes remain and SSE2 is
 * there, one load finds its end and checks it at once. */
static inline Py_ssize_t text_end(const u8 *s, Py_ssize_t n, Py_ssize_t text)
{
#if VOCMATCH_SSE2
    if (n - text >= 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(s + text));
        unsigned int open = (unsigned int)_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8('<')));
        if (open != 0) {
            int length = lowest_bit(open);
            unsigned int before = (1u << length) - 1;
            if (((unsigned int)_mm_movemask_epi8(unplain_vector(v)) & before) == 0)
                return text + length;
        }
    }
#endif
    Py_ssize_t end = find_open(s, n, text);
    return end < 0 || !plain_range(s, n, text, end) ? -1 : end;
}

/* Read the object whose '<' is at s[start] by the layout of the one before: 1 read (its
 * row appended, *end after it), 0 if its bytes are not that layout's (the full scan reads
 * it), or add_object's 0 or -1. */
static int read_like(const u8 *s, Py_ssize_t n, Py_ssize_t start, const Layout *layout,
                     Output *out, Py_ssize_t *end, int *matched)
{
    Field fields[F_COUNT];
    Field corners[4];
    memcpy(fields, layout->fields, sizeof fields);
    memcpy(corners, layout->corners, sizeof corners);
    Py_ssize_t pos = start;
    *matched = 0;
    for (int i = 0; i < layout->texts; i++) {
        Span segment = layout->segments[i];
        if (n - pos < segment.n || memcmp(s + pos, segment.p, (size_t)segment.n) != 0)
            return 0;
        Py_ssize_t text = pos + segment.n;
        pos = text_end(s, n, text);
        if (pos < 0)
            return 0;
        int role = layout->role[i];
        if (role >= 0) {
            Field *field = role < F_COUNT ? &fields[role] : &corners[role - F_COUNT];
            field->text.p = s + text;
            field->text.n = pos - text;
        }
    }
    Span last = layout->segments[layout->texts];
    if (n - pos < last.n || memcmp(s + pos, last.p, (size_t)last.n) != 0)
        return 0;
    *end = pos + last.n;
    *matched = 1;
    return add_object(fields, corners, out);
}

/* --- the header ------------------------------------------------------------------- */

typedef struct {
    Field filename, width, height, depth;
    int size_seen;
    Py_ssize_t first_object; /* index of the first <object>, -1 in a file without one */
    Tag object_tag;
} Header;

/* Read the root's start tag and its children up to the first <object> (or, in a file
 * without objects, to the root's end and whitespace to the end): 1 read, 0 the parser's. */
static int read_header(const u8 *s, Py_ssize_t n, Py_ssize_t pos, Header *h)
{
    memset(h, 0, sizeof *h);
    pos = skip_space(s, n, pos);
    static const char root[] = "<annotation";
    Py_ssize_t root_len = (Py_ssize_t)sizeof root - 1;
    if (n - pos < root_len + 1 || memcmp(s + pos, root, (size_t)root_len) != 0)
        return 0;
    pos += root_len;
    if (s[pos] == ' ') {
        static const char yes[] = " verified=\"yes\">", no[] = " verified=\"no\">";
        if (n - pos >= (Py_ssize_t)sizeof yes - 1 && memcmp(s + pos, yes, sizeof yes - 1) == 0)
            pos += (Py_ssize_t)sizeof yes - 1;
        else if (n - pos >= (Py_ssize_t)sizeof no - 1 && memcmp(s + pos, no, sizeof no - 1) == 0)
            pos += (Py_ssize_t)sizeof no - 1;
        else
            return 0;
    } else if (s[pos] == '>') {
        pos++;
    } else {
        return 0;
    }
    Span stack[MAX_DEPTH];
    int depth = 1, in_size = 0;
    stack[0].p = (const u8 *)"annotation";
    stack[0].n = 10;
    Py_ssize_t at;
    Tag tag;
    for (;;) {
        if (!next_tag(s, n, pos, &at, &tag))
            return 0;
        if (tag.closing) {
            if (depth == 1) {
                /* The root's end before any object: a file without objects (an image with
                 * nothing in it), read here rather than by the parser, which would be
                 * imported for it alone. */
                if (!SPAN_IS(tag.name, "annotation") || skip_space(s, n, tag.end) != n)
                    return 0;
                h->first_object = -1;
                break;
            }
            if (!span_equal(tag.name, stack[depth - 1]))
                return 0; /* mismatched tags */
            if (depth == 2 && in_size)
                in_size = 0;
            depth--;
            pos = tag.end;
            continue;
        }
        if (SPAN_IS(tag.name, "object")) {
            if (depth != 1)
                return 0;
            h->first_object = at;
            h->object_tag = tag;
            break;
        }
        Span text = {NULL, 0};
        Py_ssize_t after = 0;
        int leaf = leaf_text(s, n, &tag, &text, &after);
        if (leaf < 0)
            return 0;
        if (depth == 1) {
            if (SPAN_IS(tag.name, "filename"))
                first_field(&h->filename, leaf, text);
            if (!h->size_seen && SPAN_IS(tag.name, "size")) {
                h->size_seen = 1;
                in_size = !leaf;
            }
        } else if (depth == 2 && in_size) {
            if (SPAN_IS(tag.name, "width"))
                first_field(&h->width, leaf, text);
            else if (SPAN_IS(tag.name, "height"))
                first_field(&h->height, leaf, text);
            else if (SPAN_IS(tag.name, "depth"))
                first_field(&h->depth, leaf, text);
        }
        if (leaf) {
            pos = after;
        } else {
            if (depth >= MAX_DEPTH)
                return 0;
            stack[depth++] = tag.name;
            pos = tag.end;
        }
    }
    if (h->filename.state == NESTED || h->depth.state == NESTED)
        return 0;
    if (h->size_seen && (h->width.state != LEAF || h->height.state != LEAF))
        return 0; /* the parser's error: <size> without <width> or <height> */
    return 1;
}

static PyObject *span_bytes(Span t) { return PyBytes_FromStringAndSize((const char *)t.p, t.n); }

static PyObject *header_tuple(const Header *h, PyObject **size)
{
    *size = Py_None;
    Py_INCREF(Py_None);
    if (h->size_seen) {
        Py_DECREF(Py_None);
        PyObject *depth = h->depth.state == LEAF ? span_bytes(h->depth.text) : Py_NewRef(Py_None);
        PyObject *width = span_bytes(h->width.text), *height = span_bytes(h->height.text);
        *size = (depth && width && height) ? PyTuple_Pack(3, width, height, depth) : NULL;
        Py_XDECREF(depth);
        Py_XDECREF(width);
        Py_XDECREF(height);
        if (*size == NULL)
            return NULL;
    }
    return h->filename.state == LEAF ? span_bytes(h->filename.text) : Py_NewRef(Py_None);
}

/* The texts of a column of spans as a list of bytes (None for an absent one). */
static PyObject *span_list(const Column *spans, Cache *cache)
{
    Py_ssize_t count = (Py_ssize_t)(spans->len / sizeof(Span));
    PyObject *list = PyList_New(count);
    if (list == NULL)
        return NULL;
    const Span *span = (const Span *)spans->p;
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *text = span[i].n < 0 ? Py_NewRef(Py_None) : cached_bytes(cache, span[i]);
        if (text == NULL) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, i, text);
    }
    return list;
}

/* --- the module ------------------------------------------------------------------- */

static void output_free(Output *out)
{
    free(out->coordinates.p);
    free(out->scores.p);
    free(out->difficult.p);
    free(out->truncated.p);
    free(out->occluded.p);
    free(out->names.p);
    free(out->poses.p);
}

/* 1 read, 0 the parser's, -1 out of memory (no exception set). It touches no Python
 * object and runs without the GIL in read_chunk (out->released set): the GIL is taken only
 * for Python's conversion of a number the exact path cannot convert. */
static int read_file(const u8 *s, Py_ssize_t n, Output *out, Header *header)
{
    /* Every byte is checked (plain_range) once, where it is read: the header here, each
     * object read tag by tag whole (read_object), each text of an object read by a layout
     * (read_like: the segments around its texts are those of an object checked before),
     * the bytes between objects below, and the end (whitespace and the root's end tag).
     * These ranges start at a '<' or after a '>' and end before a '<' or after a '>',
     * which no UTF-8 sequence and no "]]>" crosses, and a range's last sequence or ']' is
     * checked with the bytes after it: a file is read only if its bytes are plain. */
    Py_ssize_t start = after_declaration(s, n);
    if (start < 0 || !read_header(s, n, start, header))
        return 0;
    if (!plain_range(s, n, 0, header->first_object < 0 ? n : header->first_object))
        return 0;
    if (header->first_object < 0)
        return 1; /* no objects: the header is the whole file */
    Tag tag = header->object_tag;
    Py_ssize_t at = header->first_object, end;
    /* The layouts of the last two objects read tag by tag, the one that read an object
     * last first (files whose objects take turns between two layouts read by both). */
    Layout layouts[2];
    layouts[0].texts = layouts[1].texts = -1;
    int recent = 0;
    /* Objects in a row that neither layout read: after a few, the layouts are tried on one
     * object in eight only (a file whose objects rarely repeat a layout is read tag by tag
     * at nearly the cost of reading it so). */
    unsigned int misses = 0;
    for (;;) {
        int read = 0, matched = 0;
        for (int k = misses < 4 || misses % 8 == 0 ? 0 : 2; k < 2 && !matched; k++) {
            int which = k == 0 ? recent : 1 - recent;
            if (layouts[which].texts < 0)
                continue;
            read = read_like(s, n, at, &layouts[which], out, &end, &matched);
            if (matched)
                recent = which;
        }
        misses = matched ? 0 : misses + 1;
        if (matched && read <= 0)
            return read;
        if (!matched) {
            recent = 1 - recent; /* the layout not used last gives way */
            read = read_object(s, n, at, &tag, out, &end, &layouts[recent]);
            if (read <= 0)
                return read;
        }
        if (!next_tag(s, n, end, &at, &tag))
            return 0;
        if (!tag.closing && SPAN_IS(tag.name, "object")) {
            if (!plain_range(s, n, end, at))
                return 0; /* the text between two objects */
            continue;
        }
        if (!tag.closing || !SPAN_IS(tag.name, "annotation"))
            return 0;
        /* The root's end: whitespace only since the last object, and to the end. */
        if (skip_space(s, n, end) != at || skip_space(s, n, tag.end) != n)
            return 0;
        return 1;
    }
}

static PyObject *scan(PyObject *module, PyObject *args)
{
    (void)module;
    Py_buffer view;
    double max_coordinate;
    if (!PyArg_ParseTuple(args, "y*d:scan", &view, &max_coordinate))
        return NULL;
    Output out;
    memset(&out, 0, sizeof out);
    out.max_coordinate = max_coordinate;
    Cache cache;
    memset(&cache, 0, sizeof cache);
    PyObject *result = NULL, *names = NULL, *poses = NULL;
    Header header;
    int read = read_file(view.buf, view.len, &out, &header);
    if (read < 0) {
        PyErr_NoMemory();
        goto done;
    }
    if (read == 0) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    names = span_list(&out.names, &cache);
    poses = span_list(&out.poses, &cache);
    if (names == NULL || poses == NULL)
        goto done;
    PyObject *size = NULL;
    PyObject *filename = header_tuple(&header, &size);
    PyObject *coordinates = column_bytes(&out.coordinates);
    PyObject *scores = column_bytes(&out.scores);
    PyObject *difficult = column_bytes(&out.difficult);
    PyObject *truncated = column_bytes(&out.truncated);
    PyObject *occluded = column_bytes(&out.occluded);
    if (filename && size && coordinates && scores && difficult && truncated && occluded)
        result = PyTuple_Pack(9, filename, size, names, coordinates, scores, difficult,
                              truncated, occluded, poses);
    Py_XDECREF(filename);
    Py_XDECREF(size);
    Py_XDECREF(coordinates);
    Py_XDECREF(scores);
    Py_XDECREF(difficult);
    Py_XDECREF(truncated);
    Py_XDECREF(occluded);
done:
    Py_XDECREF(names);
    Py_XDECREF(poses);
    cache_clear(&cache);
    output_free(&out);
    PyBuffer_Release(&view);
    return result;
}

/* --- a chunk of files ------------------------------------------------------------- */

/* read_chunk reads a sequence of (key, path) files into one set of columns: each file is
 * opened as vocmatch.readers.regular_files.read_bytes opens it (without blocking, close-on-exec, a
 * regular file only, its size checked before reading, at most max_bytes + 1 bytes read),
 * scanned, and its objects appended to the chunk's columns. A file it cannot read that way -- any
 * error, a file scan would leave to the parser, a <size> or name only Python reads the
 * same way -- is left out, and its index returned: the caller reads it file by file, so
 * its messages and its reading stay exactly those of the per-file route. */

#ifdef _WIN32
#define CHUNK_READER 0
#else
#define CHUNK_READER 1
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#ifndef O_CLOEXEC
#define O_CLOEXEC 0
#endif
#ifndef O_NONBLOCK
#define O_NONBLOCK 0
#endif
#ifndef O_DIRECTORY
#define O_DIRECTORY 0
#endif
#endif

/* A time of a stat in nanoseconds, as os.stat's st_mtime_ns and st_ctime_ns make it
 * (the fields pyconfig.h says this system has). */
#if defined(HAVE_STAT_TV_NSEC)
#define STAT_NS(found, which) \
    ((int64_t)(found).st_##which##tim.tv_sec * 1000000000 + \
     (int64_t)(found).st_##which##tim.tv_nsec)
#elif defined(HAVE_STAT_TV_NSEC2)
#define STAT_NS(found, which) \
    ((int64_t)(found).st_##which##timespec.tv_sec * 1000000000 + \
     (int64_t)(found).st_##which##timespec.tv_nsec)
#else
#define STAT_NS(found, which) ((int64_t)(found).st_##which##time * 1000000000)
#endif

/* Fewer digits than this make an integer below 2**53: float() of them is exact. */
#define EXACT_DIGITS 16

/* The texts the chunk has met (names or poses), each given a code in order of first
 * appearance: the raw bytes, and the text as the parser reads it (stripped, CR LF as LF). */
typedef struct {
    PyObject *raw; /* bytes; NULL for an empty slot */
    uint32_t hash;
    int32_t code;
} Entry;

typedef struct {
    Entry *slots;
    size_t capacity, count; /* capacity: a power of two */
    PyObject *texts;        /* list of (raw, text) by code; NULL: the raw bytes alone */
} Table;

static uint32_t span_hash(Span t)
{
    uint32_t h = 2166136261u;
    for (Py_ssize_t i = 0; i < t.n; i++)
        h = (h ^ t.p[i]) * 16777619u;
    return h;
}

/* The code of a text, or -1 if the table does not hold it. */
static int32_t table_find(const Table *table, Span t, uint32_t hash)
{
    if (table->capacity == 0)
        return -1;
    size_t mask = table->capacity - 1;
    for (size_t i = hash & mask;; i = (i + 1) & mask) {
        const Entry *e = &table->slots[i];
        if (e->raw == NULL)
            return -1;
        if (e->hash == hash && PyBytes_GET_SIZE(e->raw) == t.n &&
            memcmp(PyBytes_AS_STRING(e->raw), t.p, (size_t)t.n) == 0)
            return e->code;
    }
}

/* Element text as the parser reads it: CR LF and a lone CR as LF, decoded, stripped (as
 * vocmatch.readers.scan.decoded_text and str.strip). NULL with an error set. */
static PyObject *stripped_text(Span t)
{
    /* ASCII without CR inside: str.strip removes only what trim removes (the other ASCII
     * whitespace is control characters, which plain_range refuses). */
    Span trimmed = trim(t);
    int ascii = trimmed.n == 0 || memchr(trimmed.p, '\r', (size_t)trimmed.n) == NULL;
    for (Py_ssize_t i = 0; ascii && i < trimmed.n; i++)
        ascii = trimmed.p[i] < 0x80;
    if (ascii)
        return PyUnicode_DecodeASCII((const char *)trimmed.p, trimmed.n, "strict");
    PyObject *decoded;
    if (t.n > 0 && memchr(t.p, '\r', (size_t)t.n) != NULL) {
        char *copy = PyMem_Malloc((size_t)t.n);
        if (copy == NULL)
            return PyErr_NoMemory();
        Py_ssize_t k = 0;
        for (Py_ssize_t i = 0; i < t.n; i++) {
            if (t.p[i] == '\r') {
                copy[k++] = '\n';
                if (i + 1 < t.n && t.p[i + 1] == '\n')
                    i++;
            } else {
                copy[k++] = (char)t.p[i];
            }
        }
        decoded = PyUnicode_DecodeUTF8(copy, k, "strict");
        PyMem_Free(copy);
    } else {
        decoded = PyUnicode_DecodeUTF8((const char *)t.p, t.n, "strict");
    }
    if (decoded == NULL)
        return NULL;
    PyObject *stripped = PyObject_CallMethod(decoded, "strip", NULL);
    Py_DECREF(decoded);
    return stripped;
}

static int table_grow(Table *table)
{
    size_t capacity = table->capacity ? table->capacity * 2 : 64;
    Entry *slots = PyMem_Calloc(capacity, sizeof(Entry));
    if (slots == NULL) {
        PyErr_NoMemory();
        return 0;
    }
    for (size_t i = 0; i < table->capacity; i++) {
        Entry e = table->slots[i];
        if (e.raw == NULL)
            continue;
        size_t j = e.hash & (capacity - 1);
        while (slots[j].raw != NULL)
            j = (j + 1) & (capacity - 1);
        slots[j] = e;
    }
    PyMem_Free(table->slots);
    table->slots = slots;
    table->capacity = capacity;
    return 1;
}

/* Add a text the table does not hold, with its parser's reading (if the table keeps the
 * texts): its code, or -1 (error). */
static int32_t table_add(Table *table, Span t, uint32_t hash, PyObject *text)
{
    if ((table->count + 1) * 2 > table->capacity && !table_grow(table))
        return -1;
    PyObject *raw = span_bytes(t);
    if (raw == NULL)
        return -1;
    if (table->texts != NULL) {
        PyObject *pair = PyTuple_Pack(2, raw, text);
        if (pair == NULL || PyList_Append(table->texts, pair) < 0) {
            Py_XDECREF(pair);
            Py_DECREF(raw);
            return -1;
        }
        Py_DECREF(pair);
    }
    size_t mask = table->capacity - 1, i = hash & mask;
    while (table->slots[i].raw != NULL)
        i = (i + 1) & mask;
    table->slots[i].raw = raw; /* the table's reference */
    table->slots[i].hash = hash;
    table->slots[i].code = (int32_t)table->count++;
    return table->slots[i].code;
}

static void table_free(Table *table)
{
    for (size_t i = 0; i < table->capacity; i++)
        Py_XDECREF(table->slots[i].raw);
    PyMem_Free(table->slots);
    Py_XDECREF(table->texts);
}

typedef struct {
    Output out;            /* the chunk's columns */
    Column name_codes;     /* int32 by object */
    Column pose_codes;     /* int32 by object, -1 where absent */
    Column counts;         /* int64 objects by file read */
    Column size_codes;     /* int32 by file read: index into size_values, -1 without <size> */
    Column size_values;    /* int64 width, height, depth (-1 where absent) by size code */
    Table names, poses;    /* the texts met */
    Table sizes;           /* the distinct <size> values met, as size_values' bytes */
    PyObject *filenames;   /* str or None by file read */
    PyObject *left;        /* indices of the files left to the caller */
    u8 *buffer;            /* the bytes of the batch's files being read */
    size_t buffer_capacity, used;
    u8 **blocks;           /* the texts of the batches read since the GIL was released */
    size_t block_count, block_capacity, block_bytes;
    u8 *text_next;         /* where the next text goes in the last block */
    size_t text_left;      /* and the room left there */
    Column name_ids;       /* int32 by name span: its text's place in `interned` */
    Column pose_ids;       /* int32 by pose span: the same, -1 where absent */
    Column interned;       /* Interned: the distinct texts (names and poses) met */
    int32_t *intern_slots; /* open addressing over `interned`: a place + 1, 0 empty */
    size_t intern_capacity, intern_count;
    int keep;              /* keep what each file read was read from (read_chunk_kept) */
    Column kept_stats;     /* int64 size, mtime_ns, ctime_ns, inode by file read */
    Column kept_bytes;     /* the bytes scanned of each file read, one after the other */
    Column kept_ends;      /* int64 by file read: where its bytes end in kept_bytes */
} Chunk;

/* A distinct text of the batches read without the GIL (a copy in the text blocks), and
 * what the GIL's steps found of it: its code in the chunk's names and in its poses (-1 not
 * yet), and whether, stripped, it is empty (-1 not known yet). */
typedef struct {
    Span text;
    uint32_t hash;
    int32_t name_code, pose_code;
    int empty;
} Interned;

/* 1 if a text is 1 to EXACT_DIGITS - 1 ASCII digits, its value in *value. */
static int plain_digits(Span t, int64_t *value)
{
    if (t.n < 1 || t.n >= EXACT_DIGITS)
        return 0;
    int64_t v = 0;
    for (Py_ssize_t i = 0; i < t.n; i++) {
        if (!is_digit(t.p[i]))
            return 0;
        v = v * 10 + (t.p[i] - '0');
    }
    *value = v;
    return 1;
}

/* The header's <size> where it is plain digits (read as
 * vocmatch.readers.scan.size_from_text reads them): 1 with width, height and depth in
 * `values` (depth -1 where absent), 2 without <size>, 0 where only Python reads it the
 * same way. */
static int plain_size(const Header *h, int64_t values[3])
{
    if (!h->size_seen)
        return 2;
    values[2] = -1;
    if (!plain_digits(h->width.text, &values[0]) || !plain_digits(h->height.text, &values[1]))
        return 0;
    if (h->depth.state == LEAF) {
        Span depth = trim(h->depth.text);
        if (depth.n > 0) {
            if (depth.n != h->depth.text.n || !plain_digits(depth, &values[2]))
                return 0; /* whitespace around digits, or more than digits: Python's */
        } else {
            for (Py_ssize_t i = 0; i < h->depth.text.n; i++)
                if (!is_space(h->depth.text.p[i]))
                    return 0;
        }
    }
    return 1;
}

/* Append the code of a file's <size> to the chunk's size codes: the index of its values in
 * the chunk's distinct sizes (added the first time they are met), -1 without <size> (values
 * NULL). 1, or -1 an error. */
static int add_size_code(Chunk *chunk, const int64_t *values)
{
    int32_t code = -1;
    if (values != NULL) {
        Span key = {(const u8 *)values, 3 * (Py_ssize_t)sizeof(int64_t)};
        uint32_t hash = span_hash(key);
        code = table_find(&chunk->sizes, key, hash);
        if (code < 0) {
            code = table_add(&chunk->sizes, key, hash, NULL);
            if (code < 0)
                return -1;
            if (!column_add(&chunk->size_values, values, (size_t)key.n)) {
                PyErr_NoMemory();
                return -1;
            }
        }
    }
    if (!column_add(&chunk->size_codes, &code, sizeof code)) {
        PyErr_NoMemory();
        return -1;
    }
    return 1;
}

/* The code of a text in the table, the text added (with its parser's reading) if new: the
 * code, or -1 (an error). */
static int32_t span_code(Table *table, Span t)
{
    uint32_t hash = span_hash(t);
    int32_t code = table_find(table, t, hash);
    if (code >= 0)
        return code;
    PyObject *text = stripped_text(t);
    if (text == NULL)
        return -1;
    code = table_add(table, t, hash, text);
    Py_DECREF(text);
    return code;
}

/* The names of a file's objects (rows `first` to `count` of the name ids): 1 if each is
 * one the chunk holds or one whose stripped text is not empty (an empty name is the
 * parser's to refuse), 0 if not, -1 an error. Nothing is added to the table; each name's
 * code is appended to the chunk's name codes, -1 for a name the table does not hold yet
 * (the caller takes them back unless it adds the file: see name_codes). */
static int names_usable(Chunk *chunk, size_t first, size_t count)
{
    const int32_t *ids = (const int32_t *)(void *)chunk->name_ids.p;
    Interned *interned = (Interned *)(void *)chunk->interned.p;
    for (size_t i = first; i < count; i++) {
        Interned *name = &interned[ids[i]];
        int32_t code = name->name_code;
        if (code < 0 && name->empty < 0) {
            PyObject *text = stripped_text(name->text);
            if (text == NULL)
                return -1;
            name->empty = PyUnicode_GET_LENGTH(text) == 0;
            Py_DECREF(text);
        }
        if (code < 0 && name->empty)
            return 0;
        if (!column_add(&chunk->name_codes, &code, sizeof code)) {
            PyErr_NoMemory();
            return -1;
        }
    }
    return 1;
}

/* The codes names_usable left -1 (from `mark`, a byte offset into the chunk's name codes,
 * for rows `first` to `count` of the name ids), their names added to the table: 1 or -1.
 * Each distinct text is looked up once a chunk. */
static int name_codes(Chunk *chunk, size_t mark, size_t first, size_t count)
{
    const int32_t *ids = (const int32_t *)(void *)chunk->name_ids.p;
    Interned *interned = (Interned *)(void *)chunk->interned.p;
    int32_t *codes = (int32_t *)(void *)(chunk->name_codes.p + mark);
    for (size_t i = first; i < count; i++, codes++) {
        if (*codes < 0) {
            Interned *name = &interned[ids[i]];
            if (name->name_code < 0)
                name->name_code = span_code(&chunk->names, name->text);
            *codes = name->name_code;
            if (*codes < 0)
                return -1;
        }
    }
    return 1;
}

/* The pose code of each of rows `first` to `count` of the pose ids (adding new texts to
 * the chunk's poses; -1 for an absent one), appended to the chunk's pose codes: 1 or -1. */
static int pose_codes(Chunk *chunk, size_t first, size_t count)
{
    const int32_t *ids = (const int32_t *)(void *)chunk->pose_ids.p;
    Interned *interned = (Interned *)(void *)chunk->interned.p;
    for (size_t i = first; i < count; i++) {
        int32_t code = -1;
        if (ids[i] >= 0) {
            Interned *pose = &interned[ids[i]];
            if (pose->pose_code < 0)
                pose->pose_code = span_code(&chunk->poses, pose->text);
            code = pose->pose_code;
            if (code < 0)
                return -1;
        }
        if (!column_add(&chunk->pose_codes, &code, sizeof code)) {
            PyErr_NoMemory();
            return -1;
        }
    }
    return 1;
}

#if CHUNK_READER
/* Read a file's bytes into chunk->buffer after the bytes of the batch's files read before
 * (chunk->used), as read_bytes reads them, without the GIL (the caller released it and
 * saved its thread state in *released): 1 read (*length set), 2 no room left after the
 * batch's files (the buffer grows only while it holds none of them: their spans point into
 * it), 0 left to the caller (any refusal or failure: the caller's reading says why), -1 an
 * error (a signal's exception, set while the GIL was taken back to run the handlers). */
static int read_path(Chunk *chunk, const char *name, Py_ssize_t max_bytes,
                     Py_ssize_t text_limit, Py_ssize_t *length, int64_t stat_row[4],
                     PyThreadState **released)
{
    int fd = open(name, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return 0;
    struct stat mode;
    int result = 0;
    if (fstat(fd, &mode) != 0 || !S_ISREG(mode.st_mode) || mode.st_size > (off_t)max_bytes ||
        mode.st_size > (off_t)text_limit)
        goto done;
    /* The stat of the file opened, taken before its bytes are read: a file changed while
     * (or after) it is read has another stat next time, and is read again. */
    stat_row[0] = (int64_t)mode.st_size;
    stat_row[1] = STAT_NS(mode, m);
    stat_row[2] = STAT_NS(mode, c);
    stat_row[3] = (int64_t)(uint64_t)mode.st_ino;
    size_t base = chunk->used;
    size_t total = 0;
    size_t want = (size_t)mode.st_size + 1;
    while (total <= (size_t)max_bytes) {
        if (base + total + want > chunk->buffer_capacity) {
            if (base > 0) {
                result = 2;
                goto done;
            }
            size_t capacity = chunk->buffer_capacity ? chunk->buffer_capacity : BATCH_BYTES;
            while (capacity < total + want)
                capacity *= 2;
            /* realloc, not PyMem_Realloc: the GIL is not held here. */
            u8 *grown = realloc(chunk->buffer, capacity);
            if (grown == NULL)
                goto done; /* the caller's reading has its own limits */
            chunk->buffer = grown;
            chunk->buffer_capacity = capacity;
        }
        ssize_t got = read(fd, chunk->buffer + base + total, want);
        if (got < 0) {
            if (errno == EINTR) {
                /* Run the signal handlers (in the main thread) as read_bytes would. */
                PyEval_RestoreThread(*released);
                int failed = PyErr_CheckSignals() < 0;
                *released = PyEval_SaveThread();
                if (failed) {
                    result = -1;
                    goto done;
                }
                continue;
            }
            goto done;
        }
        if (got == 0)
            break;
        total += (size_t)got;
        size_t room = (size_t)max_bytes + 1 - (total <= (size_t)max_bytes ? total : (size_t)max_bytes + 1);
        want = room < (1 << 16) ? room : (1 << 16);
    }
    if (total > (size_t)max_bytes || total > (size_t)text_limit)
        goto done;
    *length = (Py_ssize_t)total;
    result = 1;
done:
    close(fd);
    return result;
}

/* A file of a batch: read and scanned without the GIL, then given its Python objects. */
typedef struct {
    const char *name;   /* the path's bytes (held by the caller), NULL: left unopened */
    int read;           /* 1 read, 0 left to the caller */
    size_t marks[7];    /* the columns' lengths before the file's rows */
    const u8 *bytes;    /* its bytes (in the buffer of its batch) */
    Py_ssize_t length;  /* and how many there are */
    int64_t stat[4];    /* the stat of the file opened (size, mtime_ns, ctime_ns, inode) */
    Header header;
} Pending;

static void column_marks(const Output *out, size_t marks[7])
{
    const Column *columns[7] = {&out->coordinates, &out->scores, &out->difficult,
                                &out->truncated, &out->occluded, &out->names, &out->poses};
    for (int j = 0; j < 7; j++)
        marks[j] = columns[j]->len;
}

static void column_restore(Output *out, const size_t marks[7])
{
    Column *columns[7] = {&out->coordinates, &out->scores, &out->difficult,
                          &out->truncated, &out->occluded, &out->names, &out->poses};
    for (int j = 0; j < 7; j++)
        columns[j]->len = marks[j];
}

/* A copy of n bytes in the chunk's text blocks (which never move), without the GIL:
 * NULL out of memory (no exception set). */
static const u8 *text_copy(Chunk *chunk, const u8 *p, Py_ssize_t n)
{
    static const u8 empty[1] = {0};
    if (n <= 0)
        return empty;
    if (chunk->text_left < (size_t)n) {
        if (chunk->block_count == chunk->block_capacity) {
            size_t capacity = chunk->block_capacity ? chunk->block_capacity * 2 : 16;
            u8 **grown = realloc(chunk->blocks, capacity * sizeof *grown);
            if (grown == NULL)
                return NULL;
            chunk->blocks = grown;
            chunk->block_capacity = capacity;
        }
        size_t size = (size_t)n > TEXT_BLOCK ? (size_t)n : TEXT_BLOCK;
        u8 *block = malloc(size);
        if (block == NULL)
            return NULL;
        chunk->blocks[chunk->block_count++] = block;
        chunk->block_bytes += size;
        chunk->text_next = block;
        chunk->text_left = size;
    }
    u8 *at = chunk->text_next;
    memcpy(at, p, (size_t)n);
    chunk->text_next += n;
    chunk->text_left -= (size_t)n;
    return at;
}

/* Point a header's text into the text blocks (a copy): 1, or 0 out of memory. */
static int move_text(Chunk *chunk, Span *t)
{
    if (t->p == NULL || t->n < 0)
        return 1; /* absent */
    const u8 *copy = text_copy(chunk, t->p, t->n);
    if (copy == NULL)
        return 0;
    t->p = copy;
    return 1;
}

/* The place of a text among the chunk's distinct texts, the text copied into the text
 * blocks and added if new, without the GIL: -1 out of memory (no exception set). */
static int32_t intern_text(Chunk *chunk, Span t)
{
    if ((chunk->intern_count + 1) * 2 > chunk->intern_capacity) {
        size_t capacity = chunk->intern_capacity ? chunk->intern_capacity * 2 : 256;
        int32_t *slots = calloc(capacity, sizeof *slots);
        if (slots == NULL)
            return -1;
        const Interned *interned = (const Interned *)(void *)chunk->interned.p;
        for (size_t k = 0; k < chunk->intern_count; k++) {
            size_t j = interned[k].hash & (capacity - 1);
            while (slots[j] != 0)
                j = (j + 1) & (capacity - 1);
            slots[j] = (int32_t)k + 1;
        }
        free(chunk->intern_slots);
        chunk->intern_slots = slots;
        chunk->intern_capacity = capacity;
    }
    uint32_t hash = span_hash(t);
    size_t mask = chunk->intern_capacity - 1, i = hash & mask;
    const Interned *interned = (const Interned *)(void *)chunk->interned.p;
    for (; chunk->intern_slots[i] != 0; i = (i + 1) & mask) {
        const Interned *e = &interned[chunk->intern_slots[i] - 1];
        if (e->hash == hash && e->text.n == t.n && memcmp(e->text.p, t.p, (size_t)t.n) == 0)
            return chunk->intern_slots[i] - 1;
    }
    const u8 *copy = text_copy(chunk, t.p, t.n);
    Interned added = {{copy, t.n}, hash, -1, -1, -1};
    if (copy == NULL || !column_add(&chunk->interned, &added, sizeof added))
        return -1;
    chunk->intern_slots[i] = (int32_t)++chunk->intern_count;
    return (int32_t)chunk->intern_count - 1;
}

/* After a batch, without the GIL: the place among the distinct texts of each name and
 * pose (from the given places of their span columns; a pose the same as the one before,
 * as a file's mostly are, takes its place without a look-up), and the headers' texts,
 * copied out of the buffer, which the next batch overwrites. The spans are then dropped:
 * the files' marks of them become marks of the ids (in the spans' unit). 1, or 0 out of
 * memory. */
static int move_texts(Chunk *chunk, Pending *pending, Py_ssize_t done, size_t names_from,
                      size_t poses_from)
{
    size_t names_base = chunk->name_ids.len / sizeof(int32_t) * sizeof(Span);
    size_t poses_base = chunk->pose_ids.len / sizeof(int32_t) * sizeof(Span);
    const Span *names = (const Span *)(void *)chunk->out.names.p;
    for (size_t i = names_from / sizeof(Span); i < chunk->out.names.len / sizeof(Span); i++) {
        int32_t id = intern_text(chunk, names[i]);
        if (id < 0 || !column_add(&chunk->name_ids, &id, sizeof id))
            return 0;
    }
    const Span *poses = (const Span *)(void *)chunk->out.poses.p;
    Span last = {NULL, -1};
    int32_t last_id = -1;
    for (size_t i = poses_from / sizeof(Span); i < chunk->out.poses.len / sizeof(Span); i++) {
        int32_t id = -1;
        if (poses[i].n >= 0) {
            if (poses[i].n == last.n && memcmp(poses[i].p, last.p, (size_t)last.n) == 0) {
                id = last_id;
            } else {
                id = intern_text(chunk, poses[i]);
                if (id < 0)
                    return 0;
                last = poses[i];
                last_id = id;
            }
        }
        if (!column_add(&chunk->pose_ids, &id, sizeof id))
            return 0;
    }
    for (Py_ssize_t k = 0; k < done; k++) {
        Header *h = &pending[k].header;
        if (pending[k].read <= 0)
            continue;
        Field *fields[4] = {&h->filename, &h->width, &h->height, &h->depth};
        for (int j = 0; j < 4; j++)
            if (fields[j]->state != ABSENT && !move_text(chunk, &fields[j]->text))
                return 0;
    }
    for (Py_ssize_t k = 0; k < done; k++) {
        pending[k].marks[5] = pending[k].marks[5] - names_from + names_base;
        pending[k].marks[6] = pending[k].marks[6] - poses_from + poses_base;
    }
    chunk->out.names.len = names_from;
    chunk->out.poses.len = poses_from;
    return 1;
}

/* The text blocks of the batches whose Python objects are made: freed. */
static void free_blocks(Chunk *chunk)
{
    for (size_t i = 0; i < chunk->block_count; i++)
        free(chunk->blocks[i]);
    chunk->block_count = 0;
    chunk->block_bytes = 0;
    chunk->text_next = NULL;
    chunk->text_left = 0;
    /* The distinct texts were in the blocks: the next batches meet them anew. */
    if (chunk->intern_slots != NULL)
        memset(chunk->intern_slots, 0, chunk->intern_capacity * sizeof *chunk->intern_slots);
    chunk->intern_count = 0;
    chunk->interned.len = 0;
}

/* Open, read and scan files into the chunk's C columns with the GIL released by the caller
 * (its thread state in *saved; other threads read other chunks meanwhile), until `count`
 * files are read or the buffer holds BATCH_BYTES: the number of files read (at least one),
 * or -1 an error (set with the GIL taken back in read_path, or out of memory: the caller
 * sets it). Nothing here touches a Python object: each name is the buffer of a bytes
 * object the caller holds, and the columns and buffer grow with realloc. */
static Py_ssize_t read_batch(Chunk *chunk, Pending *pending, Py_ssize_t count,
                             Py_ssize_t max_bytes, Py_ssize_t text_limit,
                             PyThreadState **saved)
{
    PyThreadState *released = *saved;
    Py_ssize_t done = 0;
    int failed = 0;
    chunk->used = 0;
    for (; done < count; done++) {
        Pending *p = &pending[done];
        column_marks(&chunk->out, p->marks);
        p->read = 0;
        if (p->name == NULL)
            continue;
        size_t base = chunk->used;
        Py_ssize_t length = 0;
        int read = read_path(chunk, p->name, max_bytes, text_limit, &length, p->stat,
                             &released);
        if (read == 2)
            break; /* read again in the next batch, from the buffer's start */
        p->bytes = chunk->buffer + base;
        p->length = length;
        if (read > 0) {
            chunk->out.released = &released;
            read = read_file(chunk->buffer + base, length, &chunk->out, &p->header);
            chunk->out.released = NULL;
        }
        if (read < 0) {
            failed = 1;
            break;
        }
        if (read == 0)
            column_restore(&chunk->out, p->marks); /* nothing of the file */
        else
            chunk->used = base + (size_t)length;
        p->read = read;
    }
    *saved = released;
    return failed ? -1 : done;
}

/* The Python steps of a file read without the GIL: its size, filename, and the codes of
 * its names and poses (rows `first` to `end` of the name and pose ids): 1 added, 0 left to
 * the caller (nothing added), -1 an error. */
static int add_file(Chunk *chunk, const Header *header, size_t first, size_t end)
{
    PyObject *filename = NULL;
    int64_t size[3];
    int read = plain_size(header, size);
    const int64_t *size_values = read == 1 ? size : NULL;
    size_t codes_mark = chunk->name_codes.len;
    if (read > 0)
        read = names_usable(chunk, first, end);
    if (read > 0 && header->filename.state == LEAF) {
        filename = stripped_text(header->filename.text);
        read = filename == NULL ? -1 : 1;
    }
    if (read > 0) {
        int64_t count = (int64_t)(end - first);
        if (filename == NULL)
            filename = Py_NewRef(Py_None);
        if (name_codes(chunk, codes_mark, first, end) < 0 ||
            pose_codes(chunk, first, end) < 0 ||
            add_size_code(chunk, size_values) < 0)
            read = -1;
        else if (!column_add(&chunk->counts, &count, sizeof count)) {
            PyErr_NoMemory();
            read = -1;
        } else if (PyList_Append(chunk->filenames, filename) < 0)
            read = -1;
    }
    if (read == 0)
        chunk->name_codes.len = codes_mark; /* the file is left: none of its codes */
    Py_XDECREF(filename);
    return read;
}

/* Keep a file read's stat and the bytes it was scanned from (read_chunk_kept): 1, or -1
 * out of memory (set). */
static int keep_file(Chunk *chunk, const Pending *p)
{
    int ok = column_add(&chunk->kept_stats, p->stat, sizeof p->stat) &&
             column_add(&chunk->kept_bytes, p->bytes, (size_t)p->length);
    int64_t end = (int64_t)chunk->kept_bytes.len;
    if (!ok || !column_add(&chunk->kept_ends, &end, sizeof end)) {
        PyErr_NoMemory();
        return -1;
    }
    return 1;
}

/* Add the files of the batches read since the last call in order, with the GIL: each file
 * read keeps its rows (moved down over the rows of files left before it), each file left
 * (its index, from `start`) goes to chunk->left. 1 or -1 (an error). */
static int add_batch(Chunk *chunk, const Pending *pending, Py_ssize_t done, Py_ssize_t start)
{
    Output *out = &chunk->out;
    Column *columns[5] = {&out->coordinates, &out->scores, &out->difficult, &out->truncated,
                          &out->occluded};
    size_t write[5], ends[7];
    for (int j = 0; j < 5; j++)
        write[j] = pending[0].marks[j];
    for (Py_ssize_t k = 0; k < done; k++) {
        const Pending *p = &pending[k];
        if (k + 1 < done) {
            memcpy(ends, pending[k + 1].marks, sizeof ends);
        } else {
            column_marks(out, ends);
            /* The names' and poses' marks are of their ids (move_texts). */
            ends[5] = chunk->name_ids.len / sizeof(int32_t) * sizeof(Span);
            ends[6] = chunk->pose_ids.len / sizeof(int32_t) * sizeof(Span);
        }
        int read = p->read;
        if (read > 0)
            read = add_file(chunk, &p->header, p->marks[5] / sizeof(Span),
                            ends[5] / sizeof(Span));
        if (read > 0 && chunk->keep && keep_file(chunk, p) < 0)
            read = -1;
        if (read < 0)
            return -1;
        if (read > 0) {
            for (int j = 0; j < 5; j++) {
                size_t n = ends[j] - p->marks[j];
                if (write[j] != p->marks[j])
                    memmove(columns[j]->p + write[j], columns[j]->p + p->marks[j], n);
                write[j] += n;
            }
            continue;
        }
        PyObject *index = PyLong_FromSsize_t(start + k);
        if (index == NULL || PyList_Append(chunk->left, index) < 0) {
            Py_XDECREF(index);
            return -1;
        }
        Py_DECREF(index);
    }
    for (int j = 0; j < 5; j++)
        columns[j]->len = write[j];
    /* The ids' texts are in the text blocks, freed next. */
    out->names.len = 0;
    out->poses.len = 0;
    chunk->name_ids.len = 0;
    chunk->pose_ids.len = 0;
    return 1;
}

/* Read the chunk's files batch by batch, the GIL released while batches are read and
 * taken to add them (once for a chunk whose texts fit KEEP_TEXTS; once a batch with
 * `keep`): 1, or -1 an error. */
static int read_files(Chunk *chunk, PyObject *paths, Py_ssize_t max_bytes, Py_ssize_t text_limit)
{
    Py_ssize_t n = PyList_GET_SIZE(paths);
    /* Every path encoded first, while the GIL is held (a thread may change the list later). */
    PyObject **encoded = PyMem_Calloc((size_t)(n > 0 ? n : 1), sizeof(PyObject *));
    Pending *pending = PyMem_Calloc((size_t)(n > 0 ? n : 1), sizeof(Pending));
    int result = -1;
    if (encoded == NULL || pending == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!PyUnicode_FSConverter(PyList_GET_ITEM(paths, i), &encoded[i])) {
            PyErr_Clear(); /* left to the caller, whose reading says why */
            encoded[i] = NULL;
        } else if ((Py_ssize_t)strlen(PyBytes_AS_STRING(encoded[i])) !=
                   PyBytes_GET_SIZE(encoded[i])) {
            Py_CLEAR(encoded[i]); /* a NUL in the path */
        }
    }
    for (Py_ssize_t i = 0; i < n; i++)
        pending[i].name = encoded[i] ? PyBytes_AS_STRING(encoded[i]) : NULL;
    for (Py_ssize_t start = 0; start < n;) {
        /* Batches from `start` to `i`, read with the GIL released, then added with it. */
        Py_ssize_t i = start;
        PyThreadState *released = PyEval_SaveThread();
        while (i < n && chunk->block_bytes < KEEP_TEXTS && (i == start || !chunk->keep)) {
            Py_ssize_t count = n - i < BATCH_FILES ? n - i : BATCH_FILES;
            size_t names_from = chunk->out.names.len, poses_from = chunk->out.poses.len;
            Py_ssize_t done = read_batch(chunk, pending + i, count, max_bytes, text_limit,
                                         &released);
            if (done >= 0 && !move_texts(chunk, pending + i, done, names_from, poses_from))
                done = -1;
            if (done < 0) {
                PyEval_RestoreThread(released);
                if (!PyErr_Occurred())
                    PyErr_NoMemory();
                goto done;
            }
            i += done;
        }
        PyEval_RestoreThread(released);
        int added = add_batch(chunk, pending + start, i - start, start);
        free_blocks(chunk);
        if (added < 0)
            goto done;
        start = i;
    }
    result = 1;
done:
    if (encoded != NULL)
        for (Py_ssize_t i = 0; i < n; i++)
            Py_XDECREF(encoded[i]);
    PyMem_Free(encoded);
    PyMem_Free(pending);
    return result;
}
#else
/* Without POSIX files, every file is left to the caller: 1, or -1 an error. */
static int read_files(Chunk *chunk, PyObject *paths, Py_ssize_t max_bytes, Py_ssize_t text_limit)
{
    (void)max_bytes;
    (void)text_limit;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(paths); i++) {
        PyObject *index = PyLong_FromSsize_t(i);
        if (index == NULL || PyList_Append(chunk->left, index) < 0) {
            Py_XDECREF(index);
            return -1;
        }
        Py_DECREF(index);
    }
    return 1;
}
#endif

static void chunk_free(Chunk *chunk)
{
    output_free(&chunk->out);
    free(chunk->name_codes.p);
    free(chunk->pose_codes.p);
    free(chunk->counts.p);
    free(chunk->size_codes.p);
    free(chunk->size_values.p);
    table_free(&chunk->names);
    table_free(&chunk->poses);
    table_free(&chunk->sizes);
    Py_XDECREF(chunk->filenames);
    Py_XDECREF(chunk->left);
    free(chunk->buffer);
    for (size_t i = 0; i < chunk->block_count; i++)
        free(chunk->blocks[i]);
    free(chunk->blocks);
    free(chunk->name_ids.p);
    free(chunk->pose_ids.p);
    free(chunk->interned.p);
    free(chunk->intern_slots);
    free(chunk->kept_stats.p);
    free(chunk->kept_bytes.p);
    free(chunk->kept_ends.p);
}

static PyObject *chunk_result(Chunk *chunk)
{
    Output *out = &chunk->out;
    PyObject *items[10] = {
        column_bytes(&out->coordinates), column_bytes(&out->scores),
        column_bytes(&out->difficult),   column_bytes(&out->truncated),
        column_bytes(&out->occluded),    column_bytes(&chunk->name_codes),
        column_bytes(&chunk->pose_codes), column_bytes(&chunk->counts),
        column_bytes(&chunk->size_codes), column_bytes(&chunk->size_values)};
    PyObject *result = NULL;
    int ok = 1;
    for (int i = 0; i < 10; i++)
        ok = ok && items[i] != NULL;
    if (ok)
        result = PyTuple_Pack(14, items[0], items[1], items[2], items[3], items[4], items[5],
                              items[6], items[7], items[8], items[9], chunk->names.texts,
                              chunk->poses.texts, chunk->filenames, chunk->left);
    for (int i = 0; i < 10; i++)
        Py_XDECREF(items[i]);
    return result;
}

/* The paths of a sequence of (key, path) tuples, as a new list; NULL with TypeError set
 * where an item is not such a tuple. */
static PyObject *chunk_paths(PyObject *files)
{
    PyObject *items = PySequence_Fast(files, "read_chunk: files must be a sequence");
    if (items == NULL)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(items);
    PyObject *paths = PyList_New(n);
    for (Py_ssize_t i = 0; paths != NULL && i < n; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(items, i);
        if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 2) {
            PyErr_SetString(PyExc_TypeError, "read_chunk: each file must be a (key, path) tuple");
            Py_CLEAR(paths);
            break;
        }
        PyList_SET_ITEM(paths, i, Py_NewRef(PyTuple_GET_ITEM(item, 1)));
    }
    Py_DECREF(items);
    return paths;
}

/* read_chunk's and read_chunk_kept's reading: the chunk's columns, and with `keep` what
 * each file read was read from. */
static PyObject *chunk_read(PyObject *args, int keep, const char *format)
{
    PyObject *files, *paths;
    Py_ssize_t max_bytes, text_limit;
    double max_coordinate;
    if (!PyArg_ParseTuple(args, format, &files, &max_bytes, &max_coordinate, &text_limit))
        return NULL;
    paths = chunk_paths(files);
    if (paths == NULL)
        return NULL;
    Chunk chunk;
    memset(&chunk, 0, sizeof chunk);
    chunk.keep = keep;
    chunk.out.max_coordinate = max_coordinate;
    chunk.names.texts = PyList_New(0);
    chunk.poses.texts = PyList_New(0);
    chunk.filenames = PyList_New(0);
    chunk.left = PyList_New(0);
    PyObject *result = NULL;
    if (!chunk.names.texts || !chunk.poses.texts || !chunk.filenames || !chunk.left)
        goto done;
    if (read_files(&chunk, paths, max_bytes, text_limit) < 0)
        goto done;
    result = chunk_result(&chunk);
    if (result != NULL && keep) {
        PyObject *items[3] = {column_bytes(&chunk.kept_stats), column_bytes(&chunk.kept_bytes),
                              column_bytes(&chunk.kept_ends)};
        PyObject *kept = NULL, *both = NULL;
        if (items[0] != NULL && items[1] != NULL && items[2] != NULL)
            kept = PyTuple_Pack(3, items[0], items[1], items[2]);
        if (kept != NULL)
            both = PyTuple_Pack(2, result, kept);
        for (int i = 0; i < 3; i++)
            Py_XDECREF(items[i]);
        Py_XDECREF(kept);
        Py_DECREF(result);
        result = both;
    }
done:
    chunk_free(&chunk);
    Py_DECREF(paths);
    return result;
}

static PyObject *read_chunk(PyObject *module, PyObject *args)
{
    (void)module;
    return chunk_read(args, 0, "Ondn:read_chunk");
}

/* read_chunk, and for each file read (in order) the stat of the file it opened (fstat of
 * the descriptor it read, before reading) and the bytes it scanned: what a cache keys the
 * file's records by, of the very bytes they were read from. */
static PyObject *read_chunk_kept(PyObject *module, PyObject *args)
{
    (void)module;
    return chunk_read(args, 1, "Ondn:read_chunk_kept");
}

static PyObject *number(PyObject *module, PyObject *args)
{
    (void)module;
    Py_buffer view;
    if (!PyArg_ParseTuple(args, "y*:read_number", &view))
        return NULL;
    Span text = {view.buf, view.len};
    double value;
    int read = read_number(text, &value, NULL);
    PyBuffer_Release(&view);
    if (read < 0)
        return PyErr_NoMemory();
    if (read == 0)
        Py_RETURN_NONE;
    return PyFloat_FromDouble(value);
}

/* --- file stats --------------------------------------------------------------------- */


/* Each path's (size, mtime_ns, ctime_ns, inode) as four int64 (the inode's bits as they
 * are), or a row of -1 where it cannot be stat'ed (os.stat raises) or encoded: the stats of
 * a whole set taken with the GIL released, the calls with no Python object between them. */
static PyObject *stat_files(PyObject *module, PyObject *args)
{
    (void)module;
    PyObject *paths;
    if (!PyArg_ParseTuple(args, "O!:stat_files", &PyList_Type, &paths))
        return NULL;
#if CHUNK_READER
    Py_ssize_t n = PyList_GET_SIZE(paths);
    PyObject **encoded = PyMem_Calloc((size_t)(n > 0 ? n : 1), sizeof(PyObject *));
    const char **names = PyMem_Calloc((size_t)(n > 0 ? n : 1), sizeof(char *));
    PyObject *result = NULL;
    if (encoded == NULL || names == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    /* Every path encoded first, while the GIL is held (a thread may change the list later). */
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!PyUnicode_FSConverter(PyList_GET_ITEM(paths, i), &encoded[i])) {
            PyErr_Clear();
            encoded[i] = NULL;
        } else if ((Py_ssize_t)strlen(PyBytes_AS_STRING(encoded[i])) !=
                   PyBytes_GET_SIZE(encoded[i])) {
            Py_CLEAR(encoded[i]); /* a NUL in the path */
        }
        names[i] = encoded[i] ? PyBytes_AS_STRING(encoded[i]) : NULL;
    }
    result = PyBytes_FromStringAndSize(NULL, n * 4 * (Py_ssize_t)sizeof(int64_t));
    if (result == NULL)
        goto done;
    int64_t *rows = (int64_t *)PyBytes_AS_STRING(result);
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) {
        struct stat found;
        int64_t *row = rows + 4 * i;
        if (names[i] == NULL || stat(names[i], &found) != 0) {
            row[0] = row[1] = row[2] = row[3] = -1;
            continue;
        }
        row[0] = (int64_t)found.st_size;
        row[1] = STAT_NS(found, m);
        row[2] = STAT_NS(found, c);
        row[3] = (int64_t)(uint64_t)found.st_ino;
    }
    Py_END_ALLOW_THREADS
done:
    if (encoded != NULL)
        for (Py_ssize_t i = 0; i < n; i++)
            Py_XDECREF(encoded[i]);
    PyMem_Free(encoded);
    PyMem_Free((void *)names);
    return result;
#else
    Py_RETURN_NONE; /* the caller stats each file itself */
#endif
}

/* --- the places of stored rankings ------------------------------------------------- */

/* places_hold(label, count, rank, n_classes): whether each prediction's rank is its place
 * among the predictions of its image and class before it (rows in order), as a stable sort
 * by class within each image gives; label int32, count and rank int64, C-contiguous. One
 * pass with a counter a class, reset after each image, with the GIL released. False for
 * anything that does not fit: a label outside the classes, counts that do not add up to
 * the predictions, a rank array of another length. */
static PyObject *places_hold(PyObject *module, PyObject *args)
{
    (void)module;
    Py_buffer label, count, rank;
    Py_ssize_t n_classes;
    if (!PyArg_ParseTuple(args, "y*y*y*n:places_hold", &label, &count, &rank, &n_classes))
        return NULL;
    int holds = label.len % (Py_ssize_t)sizeof(int32_t) == 0 &&
                count.len % (Py_ssize_t)sizeof(int64_t) == 0 &&
                rank.len / (Py_ssize_t)sizeof(int64_t) == label.len / (Py_ssize_t)sizeof(int32_t) &&
                rank.len % (Py_ssize_t)sizeof(int64_t) == 0 && n_classes >= 0;
    int64_t *counter = holds ? calloc((size_t)(n_classes > 0 ? n_classes : 1), sizeof(int64_t))
                             : NULL;
    int failed_memory = holds && counter == NULL;
    if (counter != NULL) {
        const int32_t *labels = label.buf;
        const int64_t *counts = count.buf, *ranks = rank.buf;
        Py_ssize_t n = label.len / (Py_ssize_t)sizeof(int32_t);
        Py_ssize_t images = count.len / (Py_ssize_t)sizeof(int64_t);
        Py_BEGIN_ALLOW_THREADS
        Py_ssize_t start = 0;
        for (Py_ssize_t image = 0; holds && image < images; image++) {
            int64_t c = counts[image];
            if (c < 0 || c > n - start) {
                holds = 0;
                break;
            }
            Py_ssize_t end = start + (Py_ssize_t)c, i;
            for (i = start; i < end; i++) {
                int32_t k = labels[i];
                if (k < 0 || k >= n_classes || ranks[i] != counter[k]++) {
                    holds = 0;
                    break;
                }
            }
            for (Py_ssize_t j = start; j < i; j++)
                counter[labels[j]] = 0;
            start = end;
        }
        if (holds && start != n)
            holds = 0;
        Py_END_ALLOW_THREADS
        free(counter);
    }
    PyBuffer_Release(&label);
    PyBuffer_Release(&count);
    PyBuffer_Release(&rank);
    if (failed_memory)
        return PyErr_NoMemory();
    return PyBool_FromLong(holds);
}

/* rows_fit(rows, sizes, label): whether rows (int64, every class's ranking, class after
 * class, sizes (int64) long each) holds every prediction once and each in its own class's
 * ranking (label, int32, one a prediction): one pass with a bitmap, the GIL released.
 * False for sizes that are negative or do not add up to the rows, a row outside the
 * predictions or twice, a row of another class. */
static PyObject *rows_fit(PyObject *module, PyObject *args)
{
    (void)module;
    Py_buffer rows, sizes, label;
    if (!PyArg_ParseTuple(args, "y*y*y*:rows_fit", &rows, &sizes, &label))
        return NULL;
    Py_ssize_t n = label.len / (Py_ssize_t)sizeof(int32_t);
    Py_ssize_t n_rows = rows.len / (Py_ssize_t)sizeof(int64_t);
    Py_ssize_t n_classes = sizes.len / (Py_ssize_t)sizeof(int64_t);
    int fits = rows.len % (Py_ssize_t)sizeof(int64_t) == 0 &&
               sizes.len % (Py_ssize_t)sizeof(int64_t) == 0 &&
               label.len % (Py_ssize_t)sizeof(int32_t) == 0 && n_rows == n;
    unsigned char *seen = fits ? calloc((size_t)(n > 0 ? n : 1), 1) : NULL;
    int failed_memory = fits && seen == NULL;
    if (seen != NULL) {
        const int64_t *row = rows.buf, *size = sizes.buf;
        const int32_t *labels = label.buf;
        Py_BEGIN_ALLOW_THREADS
        Py_ssize_t at = 0;
        for (Py_ssize_t k = 0; fits && k < n_classes; k++) {
            int64_t c = size[k];
            if (c < 0 || c > n - at) {
                fits = 0;
                break;
            }
            for (Py_ssize_t end = at + (Py_ssize_t)c; at < end; at++) {
                int64_t r = row[at];
                if (r < 0 || r >= n || seen[r] || labels[r] != k) {
                    fits = 0;
                    break;
                }
                seen[r] = 1;
            }
        }
        if (fits && at != n)
            fits = 0;
        Py_END_ALLOW_THREADS
        free(seen);
    }
    PyBuffer_Release(&rows);
    PyBuffer_Release(&sizes);
    PyBuffer_Release(&label);
    if (failed_memory)
        return PyErr_NoMemory();
    return PyBool_FromLong(fits);
}

/* merge_runs(big, big_score, small, small_score, out): two runs of one class's ranking
 * (rows as int64, each run by descending score, ties in row order, with their scores as
 * float64 and no NaN) merged into out (int64, as long as both) in that order, in one pass
 * with the GIL released. False, out untouched, when the lengths do not fit. */
static PyObject *merge_runs(PyObject *module, PyObject *args)
{
    (void)module;
    Py_buffer big, big_score, small, small_score, out;
    if (!PyArg_ParseTuple(args, "y*y*y*y*w*:merge_runs", &big, &big_score, &small, &small_score,
                          &out))
        return NULL;
    Py_ssize_t nb = big.len / (Py_ssize_t)sizeof(int64_t);
    Py_ssize_t ns = small.len / (Py_ssize_t)sizeof(int64_t);
    int fits = big.len % (Py_ssize_t)sizeof(int64_t) == 0 &&
               small.len % (Py_ssize_t)sizeof(int64_t) == 0 &&
               big_score.len == nb * (Py_ssize_t)sizeof(double) &&
               small_score.len == ns * (Py_ssize_t)sizeof(double) &&
               out.len == (nb + ns) * (Py_ssize_t)sizeof(int64_t);
    if (fits) {
        const int64_t *b = big.buf, *sm = small.buf;
        const double *bs = big_score.buf, *ss = small_score.buf;
        int64_t *o = out.buf;
        Py_BEGIN_ALLOW_THREADS
        Py_ssize_t i = 0, j = 0, k = 0;
        while (i < nb && j < ns) {
            /* The big run's row first when its score is higher, or equal with a lower row. */
            if (bs[i] > ss[j] || (bs[i] == ss[j] && b[i] < sm[j]))
                o[k++] = b[i++];
            else
                o[k++] = sm[j++];
        }
        while (i < nb)
            o[k++] = b[i++];
        while (j < ns)
            o[k++] = sm[j++];
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&big);
    PyBuffer_Release(&big_score);
    PyBuffer_Release(&small);
    PyBuffer_Release(&small_score);
    PyBuffer_Release(&out);
    return PyBool_FromLong(fits);
}

/* --- a folder's entries ------------------------------------------------------------ */

/* list_folder lists one folder for the directory walk (vocmatch.readers.folders): the
 * entries it can classify from the folder alone -- a regular file whose name is ASCII, does
 * not start with '.' and ends with the suffix in any case -- as (key, path) tuples sorted by
 * key then path, every other entry (a folder, a link, another kind of file, a type the
 * system does not give, a name with a leading '.' or a byte above 127) as (name, kind) for
 * the caller to decide as the walk does; an ASCII regular file without the suffix is
 * dropped. The folder is read and the entries sorted with the GIL released. None where the
 * folder cannot be read this way (the caller's os.scandir then says why). */

#if CHUNK_READER && defined(HAVE_DIRENT_D_TYPE)
#include <dirent.h>
#define FOLDER_LISTING 1

enum { KIND_OTHER, KIND_DIRECTORY, KIND_LINK, KIND_UNKNOWN, KIND_PLAIN };

typedef struct {
    const char *name; /* into the arena, once it is read whole */
    size_t offset, length, stem;
    int kind;
} FolderEntry;

static int folder_entry_order(const void *a, const void *b)
{
    const FolderEntry *x = a, *y = b;
    size_t n = x->stem < y->stem ? x->stem : y->stem;
    int c = memcmp(x->name, y->name, n);
    if (c == 0 && x->stem != y->stem)
        return x->stem < y->stem ? -1 : 1;
    if (c != 0)
        return c;
    n = x->length < y->length ? x->length : y->length;
    c = memcmp(x->name, y->name, n);
    if (c == 0 && x->length != y->length)
        return x->length < y->length ? -1 : 1;
    return c;
}

/* The kind of an entry: KIND_PLAIN, KIND_OTHER for a file to drop (-1), or the kind the
 * caller decides. */
static int entry_kind(const char *name, size_t length, unsigned char type, const char *suffix,
                      size_t suffix_length)
{
    int ascii = 1;
    for (size_t i = 0; i < length && ascii; i++)
        ascii = (unsigned char)name[i] < 0x80;
    if (type == DT_DIR)
        return KIND_DIRECTORY;
    if (type == DT_LNK)
        return KIND_LINK;
    if (type == DT_UNKNOWN)
        return KIND_UNKNOWN;
    if (type != DT_REG || !ascii)
        return KIND_OTHER;
    if (length < suffix_length)
        return -1;
    for (size_t i = 0; i < suffix_length; i++) {
        char c = name[length - suffix_length + i];
        if (c >= 'A' && c <= 'Z')
            c = (char)(c - 'A' + 'a');
        if (c != suffix[i])
            return -1;
    }
    return name[0] == '.' ? KIND_OTHER : KIND_PLAIN;
}

/* prefix + the ASCII bytes s[0:n], as one str. */
static PyObject *joined_text(PyObject *prefix, const char *s, size_t n)
{
    if (PyUnicode_IS_ASCII(prefix)) {
        Py_ssize_t length = PyUnicode_GET_LENGTH(prefix);
        PyObject *text = PyUnicode_New(length + (Py_ssize_t)n, 127);
        if (text == NULL)
            return NULL;
        memcpy(PyUnicode_1BYTE_DATA(text), PyUnicode_1BYTE_DATA(prefix), (size_t)length);
        memcpy(PyUnicode_1BYTE_DATA(text) + length, s, n);
        return text;
    }
    PyObject *tail = PyUnicode_DecodeASCII(s, (Py_ssize_t)n, "strict");
    if (tail == NULL)
        return NULL;
    PyObject *text = PyUnicode_Concat(prefix, tail);
    Py_DECREF(tail);
    return text;
}

/* Read the folder's entries into the arena: 1, 0 the folder cannot be read (errno), -1 out
 * of memory. Called without the GIL. */
static int read_folder(const char *directory, const char *suffix, size_t suffix_length,
                       char **arena, size_t *arena_used, FolderEntry **entries, size_t *count)
{
    DIR *folder = opendir(directory);
    if (folder == NULL)
        return 0;
    size_t arena_capacity = 0, capacity = 0;
    int result = 1;
    for (;;) {
        errno = 0;
        struct dirent *entry = readdir(folder);
        if (entry == NULL) {
            if (errno != 0)
                result = 0;
            break;
        }
        const char *name = entry->d_name;
        size_t length = strlen(name);
        if ((length == 1 && name[0] == '.') || (length == 2 && name[0] == '.' && name[1] == '.'))
            continue;
        int kind = entry_kind(name, length, entry->d_type, suffix, suffix_length);
        if (kind < 0)
            continue;
        if (*count == capacity) {
            capacity = capacity ? 2 * capacity : 256;
            FolderEntry *grown = realloc(*entries, capacity * sizeof **entries);
            if (grown == NULL) {
                result = -1;
                break;
            }
            *entries = grown;
        }
        if (*arena_used + length > arena_capacity) {
            arena_capacity = arena_capacity ? 2 * arena_capacity : 1 << 16;
            while (arena_capacity < *arena_used + length)
                arena_capacity *= 2;
            char *grown = realloc(*arena, arena_capacity);
            if (grown == NULL) {
                result = -1;
                break;
            }
            *arena = grown;
        }
        memcpy(*arena + *arena_used, name, length);
        FolderEntry *e = &(*entries)[(*count)++];
        e->offset = *arena_used;
        e->length = length;
        e->stem = kind == KIND_PLAIN ? length - suffix_length : 0;
        e->kind = kind;
        *arena_used += length;
    }
    closedir(folder);
    if (result == 1) {
        for (size_t i = 0; i < *count; i++)
            (*entries)[i].name = *arena + (*entries)[i].offset;
        /* The plain files first (in key order), the others after them in any order. */
        size_t plain = 0;
        for (size_t i = 0; i < *count; i++)
            if ((*entries)[i].kind == KIND_PLAIN) {
                FolderEntry swap = (*entries)[plain];
                (*entries)[plain++] = (*entries)[i];
                (*entries)[i] = swap;
            }
        qsort(*entries, plain, sizeof **entries, folder_entry_order);
    }
    return result;
}

/* The (key, path) tuples and (name, kind) tuples of a folder read: NULL with an error set. */
static PyObject *folder_result(const FolderEntry *entries, size_t count, PyObject *path_prefix,
                               PyObject *key_prefix)
{
    PyObject *files = PyList_New(0), *others = PyList_New(0), *result = NULL;
    if (files == NULL || others == NULL)
        goto done;
    for (size_t i = 0; i < count; i++) {
        const FolderEntry *e = &entries[i];
        PyObject *item = NULL;
        if (e->kind == KIND_PLAIN) {
            PyObject *key = joined_text(key_prefix, e->name, e->stem);
            PyObject *path = key ? joined_text(path_prefix, e->name, e->length) : NULL;
            if (key && path)
                item = PyTuple_Pack(2, key, path);
            Py_XDECREF(key);
            Py_XDECREF(path);
        } else {
            item = Py_BuildValue("(Ni)",
                                 PyUnicode_DecodeFSDefaultAndSize(e->name, (Py_ssize_t)e->length),
                                 e->kind);
        }
        if (item == NULL || PyList_Append(e->kind == KIND_PLAIN ? files : others, item) < 0) {
            Py_XDECREF(item);
            goto done;
        }
        Py_DECREF(item);
    }
    result = PyTuple_Pack(2, files, others);
done:
    Py_XDECREF(files);
    Py_XDECREF(others);
    return result;
}

static PyObject *list_folder(PyObject *module, PyObject *args)
{
    (void)module;
    PyObject *directory, *path_prefix, *key_prefix, *suffix_text, *encoded = NULL;
    if (!PyArg_ParseTuple(args, "UUUU:list_folder", &directory, &path_prefix, &key_prefix,
                          &suffix_text))
        return NULL;
    Py_ssize_t suffix_length;
    const char *suffix = PyUnicode_AsUTF8AndSize(suffix_text, &suffix_length);
    if (suffix == NULL)
        return NULL;
    /* A lower-case ASCII suffix with one '.', its first character: the key is the name
     * before it, as the walk's rule gives. Any other suffix is the caller's. */
    int usable = PyUnicode_IS_ASCII(suffix_text) && suffix_length > 0 && suffix[0] == '.';
    for (Py_ssize_t i = 1; usable && i < suffix_length; i++)
        usable = suffix[i] != '.' && !(suffix[i] >= 'A' && suffix[i] <= 'Z');
    if (!usable)
        Py_RETURN_NONE;
    if (!PyUnicode_FSConverter(directory, &encoded)) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    if ((Py_ssize_t)strlen(PyBytes_AS_STRING(encoded)) != PyBytes_GET_SIZE(encoded)) {
        Py_DECREF(encoded);
        Py_RETURN_NONE; /* a NUL in the path */
    }
    char *arena = NULL;
    size_t used = 0, count = 0;
    FolderEntry *entries = NULL;
    int read;
    Py_BEGIN_ALLOW_THREADS
    read = read_folder(PyBytes_AS_STRING(encoded), suffix, (size_t)suffix_length, &arena, &used,
                       &entries, &count);
    Py_END_ALLOW_THREADS
    PyObject *result = NULL;
    if (read < 0)
        PyErr_NoMemory();
    else if (read == 0)
        result = Py_NewRef(Py_None);
    else
        result = folder_result(entries, count, path_prefix, key_prefix);
    free(arena);
    free(entries);
    Py_DECREF(encoded);
    return result;
}

/* list_folder_stats is list_folder with the stats of its plain files: each one's (size,
 * mtime_ns, ctime_ns, inode) as stat_files gives them (a row of -1 where the system refuses
 * it), taken by fstatat from the folder's own descriptor right after the folder is read, in
 * the order of the (key, path) tuples, with the GIL released: one pass over the folder for
 * a run that compares its files' stats with a cache's. None where list_folder gives None or
 * the folder cannot be opened again (the caller then lists and stats it another way). */
static int stat_plain_entries(const char *directory, const FolderEntry *entries, size_t count,
                              int64_t *rows)
{
    int folder = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (folder < 0)
        return 0;
    char name[4096];
    for (size_t i = 0; i < count; i++) {
        const FolderEntry *e = &entries[i];
        int64_t *row = rows + 4 * i;
        struct stat found;
        if (e->length >= sizeof name) {
            row[0] = row[1] = row[2] = row[3] = -1;
            continue;
        }
        memcpy(name, e->name, e->length);
        name[e->length] = '\0';
        if (fstatat(folder, name, &found, 0) != 0) {
            row[0] = row[1] = row[2] = row[3] = -1;
            continue;
        }
        row[0] = (int64_t)found.st_size;
        row[1] = STAT_NS(found, m);
        row[2] = STAT_NS(found, c);
        row[3] = (int64_t)(uint64_t)found.st_ino;
    }
    close(folder);
    return 1;
}

static PyObject *list_folder_stats(PyObject *module, PyObject *args)
{
    (void)module;
    PyObject *directory, *path_prefix, *key_prefix, *suffix_text, *encoded = NULL;
    if (!PyArg_ParseTuple(args, "UUUU:list_folder_stats", &directory, &path_prefix,
                          &key_prefix, &suffix_text))
        return NULL;
    Py_ssize_t suffix_length;
    const char *suffix = PyUnicode_AsUTF8AndSize(suffix_text, &suffix_length);
    if (suffix == NULL)
        return NULL;
    /* The suffixes list_folder takes, for the same reason. */
    int usable = PyUnicode_IS_ASCII(suffix_text) && suffix_length > 0 && suffix[0] == '.';
    for (Py_ssize_t i = 1; usable && i < suffix_length; i++)
        usable = suffix[i] != '.' && !(suffix[i] >= 'A' && suffix[i] <= 'Z');
    if (!usable)
        Py_RETURN_NONE;
    if (!PyUnicode_FSConverter(directory, &encoded)) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    if ((Py_ssize_t)strlen(PyBytes_AS_STRING(encoded)) != PyBytes_GET_SIZE(encoded)) {
        Py_DECREF(encoded);
        Py_RETURN_NONE; /* a NUL in the path */
    }
    char *arena = NULL;
    size_t used = 0, count = 0, plain = 0;
    FolderEntry *entries = NULL;
    int64_t *rows = NULL;
    int read;
    Py_BEGIN_ALLOW_THREADS
    read = read_folder(PyBytes_AS_STRING(encoded), suffix, (size_t)suffix_length, &arena, &used,
                       &entries, &count);
    if (read == 1) {
        while (plain < count && entries[plain].kind == KIND_PLAIN)
            plain++;
        rows = malloc(4 * sizeof(int64_t) * (plain > 0 ? plain : 1));
        if (rows == NULL)
            read = -1;
        else
            read = stat_plain_entries(PyBytes_AS_STRING(encoded), entries, plain, rows);
    }
    Py_END_ALLOW_THREADS
    PyObject *result = NULL;
    if (read < 0)
        PyErr_NoMemory();
    else if (read == 0)
        result = Py_NewRef(Py_None);
    else {
        PyObject *listed = folder_result(entries, count, path_prefix, key_prefix);
        PyObject *stats = listed ? PyBytes_FromStringAndSize(
                                       (const char *)rows, (Py_ssize_t)(4 * sizeof(int64_t) * plain))
                                 : NULL;
        if (listed != NULL && stats != NULL)
            result = Py_BuildValue("(OON)", PyTuple_GET_ITEM(listed, 0),
                                   PyTuple_GET_ITEM(listed, 1), stats);
        else
            Py_XDECREF(stats);
        Py_XDECREF(listed);
    }
    free(rows);
    free(arena);
    free(entries);
    Py_DECREF(encoded);
    return result;
}
#endif

static PyMethodDef methods[] = {
    {"scan", scan, METH_VARARGS,
     "scan(data, max_coordinate, /)\n--\n\n"
     "A plain file's header and object columns, or None to leave the file to the parser."},
    {"read_chunk", read_chunk, METH_VARARGS,
     "read_chunk(files, max_bytes, max_coordinate, text_limit, /)\n--\n\n"
     "The plain files of a sequence of (key, path) tuples read into one set of columns, and\n"
     "the indices of the files left to the caller."},
    {"read_chunk_kept", read_chunk_kept, METH_VARARGS,
     "read_chunk_kept(files, max_bytes, max_coordinate, text_limit, /)\n--\n\n"
     "read_chunk's result, and for the files read (in order) their stats as (F, 4) int64\n"
     "bytes (size, mtime_ns, ctime_ns, inode of the file opened), the bytes scanned one\n"
     "after the other, and where each file's end as (F,) int64 bytes."},
    {"read_number", number, METH_VARARGS,
     "read_number(text, /)\n--\n\n"
     "A number's value by the annotation grammar, or None outside it."},
#ifdef FOLDER_LISTING
    {"list_folder", list_folder, METH_VARARGS,
     "list_folder(directory, path_prefix, key_prefix, suffix, /)\n--\n\n"
     "A folder's plain files with the suffix as (key, path) tuples sorted, its other entries\n"
     "as (name, kind) tuples; None where the folder cannot be read this way."},
    {"list_folder_stats", list_folder_stats, METH_VARARGS,
     "list_folder_stats(directory, path_prefix, key_prefix, suffix, /)\n--\n\n"
     "list_folder's files and entries, and the stats of its files (in their order) as (F, 4)\n"
     "int64 bytes, -1 where one cannot be stat'ed; None where list_folder gives None."},
#endif
    {"rows_fit", rows_fit, METH_VARARGS,
     "rows_fit(rows, sizes, label, /)\n--\n\n"
     "Whether rows (int64, class after class, sizes long each) holds every prediction once,\n"
     "each in its own class's ranking (int32 labels)."},
    {"merge_runs", merge_runs, METH_VARARGS,
     "merge_runs(big, big_score, small, small_score, out, /)\n--\n\n"
     "Two runs of a ranking (int64 rows by descending float64 score, ties in row order)\n"
     "merged into out in that order; False when the lengths do not fit."},
    {"places_hold", places_hold, METH_VARARGS,
     "places_hold(label, count, rank, n_classes, /)\n--\n\n"
     "Whether each prediction's rank (int64) is its place among the predictions of its image\n"
     "(int64 counts) and class (int32 labels) before it."},
    {"stat_files", stat_files, METH_VARARGS,
     "stat_files(paths, /)\n--\n\n"
     "Each path's size, mtime_ns, ctime_ns and inode as (N, 4) int64 bytes, -1 where it\n"
     "cannot be stat'ed; None where the system has no such call."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_definition = {
    PyModuleDef_HEAD_INIT, "fastxml", "The compiled fast reader of vocmatch.readers.scan.", -1,
    methods,
};

PyMODINIT_FUNC PyInit_fastxml(void)
{
    init_byte_class();
    init_name_class();
    return PyModule_Create(&module_definition);
}
