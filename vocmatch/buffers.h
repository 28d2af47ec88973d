/* The one way the compiled extensions take an array through the buffer protocol: a
 * C-contiguous buffer of one element kind, writable when asked, and the one message naming
 * the argument when an array is not that ("NAME: unexpected array type 'F' (itemsize N)",
 * with ", not C-contiguous" or ", read-only" when the layout is what is wrong); and the
 * reading of an integer element. Included by each extension (static inline: no symbols).
 */
#ifndef VOCMATCH_BUFFERS_H
#define VOCMATCH_BUFFERS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* The element kinds an extension asks for. */
typedef enum {
    VM_INTEGER, /* any integer of 1, 2, 4 or 8 bytes, either sign */
    VM_INDEX,   /* a signed integer of 4 or 8 bytes */
    VM_INT64,   /* a signed integer of 8 bytes */
    VM_FLOAT32, /* float32 */
    VM_FLOAT64, /* float64 */
    VM_BYTE     /* one byte a value: bool, int8 or uint8 */
} vm_kind;

/* The format's element character without its native or little-endian byte-order mark
 * ("B" for no format: unsigned bytes). */
static inline const char *vm_format_char(const char *format)
{
    if (format == NULL) {
        return "B";
    }
    if (*format == '@' || *format == '=' || *format == '<') {
        format++;
    }
    return format;
}

/* Whether the buffer's elements are of `kind` (and of `itemsize` bytes when not 0). */
static inline int vm_kind_ok(const Py_buffer *view, vm_kind kind, Py_ssize_t itemsize)
{
    const char *f = vm_format_char(view->format);
    const Py_ssize_t s = view->itemsize;
    if (f[0] == '\0' || f[1] != '\0' || (itemsize != 0 && s != itemsize)) {
        return 0;
    }
    switch (kind) {
    case VM_INTEGER:
        return strchr("bBhHiIlLqQ", f[0]) != NULL && (s == 1 || s == 2 || s == 4 || s == 8);
    case VM_INDEX:
        return strchr("ilq", f[0]) != NULL && (s == 4 || s == 8);
    case VM_INT64:
        return (f[0] == 'l' || f[0] == 'q') && s == 8;
    case VM_FLOAT32:
        return f[0] == 'f' && s == 4;
    case VM_FLOAT64:
        return f[0] == 'd' && s == 8;
    case VM_BYTE:
        return strchr("?bB", f[0]) != NULL && s == 1;
    }
    return 0;
}

/* The one refusal message, raised as `error`. */
static inline void vm_refuse(PyObject *error, const char *name, const Py_buffer *view,
                             const char *layout)
{
    PyErr_Format(error, "%s: unexpected array type '%s' (itemsize %zd%s)", name,
                 view->format ? view->format : "B", view->itemsize, layout);
}

/* The pending exception, taken aside as it is. */
typedef struct {
#if PY_VERSION_HEX >= 0x030C0000
    PyObject *raised;
#else
    PyObject *type, *value, *traceback;
#endif
} vm_error;

static inline vm_error vm_take_error(void)
{
    vm_error error;
#if PY_VERSION_HEX >= 0x030C0000
    error.raised = PyErr_GetRaisedException();
#else
    PyErr_Fetch(&error.type, &error.value, &error.traceback);
#endif
    return error;
}

/* The exception taken aside pending again (restore) or dropped. */
static inline void vm_end_error(vm_error error, int restore)
{
#if PY_VERSION_HEX >= 0x030C0000
    if (restore) {
        PyErr_SetRaisedException(error.raised);
    } else {
        Py_XDECREF(error.raised);
    }
#else
    if (restore) {
        PyErr_Restore(error.type, error.value, error.traceback);
    } else {
        Py_XDECREF(error.type);
        Py_XDECREF(error.value);
        Py_XDECREF(error.traceback);
    }
#endif
}

/* After a refused request: when the exporter refused the layout (a ValueError, as numpy
 * gives for a strided or read-only array), the one message instead; any other error stays. */
static inline void vm_name_layout(PyObject *obj, const char *name, int writable)
{
    if (!PyErr_ExceptionMatches(PyExc_ValueError)) {
        return;
    }
    vm_error error = vm_take_error();
    Py_buffer view;
    if (PyObject_GetBuffer(obj, &view, PyBUF_STRIDES | PyBUF_FORMAT) != 0) {
        PyErr_Clear();
        vm_end_error(error, 1);
        return;
    }
    const char *layout = writable && view.readonly ? ", read-only"
                         : !PyBuffer_IsContiguous(&view, 'C') ? ", not C-contiguous"
                                                               : NULL;
    if (layout == NULL) {
        PyBuffer_Release(&view);
        vm_end_error(error, 1);
        return;
    }
    vm_end_error(error, 0);
    vm_refuse(PyExc_ValueError, name, &view, layout);
    PyBuffer_Release(&view);
}

/* A C-contiguous buffer of `obj` holding `kind` elements (of exactly `itemsize` bytes when
 * not 0), writable when asked, into *view: 0, or -1 with nothing held and `error` raised
 * with the one message naming the argument (a ValueError for a layout refused). */
static inline int vm_get_buffer_as(PyObject *obj, Py_buffer *view, vm_kind kind,
                                   Py_ssize_t itemsize, int writable, const char *name,
                                   PyObject *error)
{
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, view, flags) != 0) {
        vm_name_layout(obj, name, writable);
        return -1;
    }
    if (!vm_kind_ok(view, kind, itemsize)) {
        vm_refuse(error, name, view, "");
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

/* vm_get_buffer_as raising ValueError. */
static inline int vm_get_buffer(PyObject *obj, Py_buffer *view, vm_kind kind,
                                Py_ssize_t itemsize, int writable, const char *name)
{
    return vm_get_buffer_as(obj, view, kind, itemsize, writable, name, PyExc_ValueError);
}

/* The number of elements of a buffer. */
static inline Py_ssize_t vm_count(const Py_buffer *view) { return view->len / view->itemsize; }

/* Element i of an integer buffer of 1, 2, 4 or 8 bytes (base, size), its bits as unsigned. */
static inline uint64_t vm_bits_at(const void *base, Py_ssize_t size, Py_ssize_t i)
{
    switch (size) {
    case 1:
        return ((const uint8_t *)base)[i];
    case 2:
        return ((const uint16_t *)base)[i];
    case 4:
        return ((const uint32_t *)base)[i];
    default:
        return ((const uint64_t *)base)[i];
    }
}

/* Element i of a VM_INDEX buffer (signed, 4 or 8 bytes). */
static inline int64_t vm_index_at(const Py_buffer *view, Py_ssize_t i)
{
    if (view->itemsize == 4) {
        return ((const int32_t *)view->buf)[i];
    }
    return ((const int64_t *)view->buf)[i];
}

/* Element i of a VM_INTEGER buffer as a signed value (-1 for an unsigned value past
 * INT64_MAX: out of any range a caller accepts). */
static inline int64_t vm_int_at(const Py_buffer *view, Py_ssize_t i)
{
    const char f = vm_format_char(view->format)[0];
    const int is_signed = f == 'b' || f == 'h' || f == 'i' || f == 'l' || f == 'q';
    const char *base = view->buf;
    switch (view->itemsize) {
    case 1:
        return is_signed ? (int64_t)((const int8_t *)base)[i] : (int64_t)((const uint8_t *)base)[i];
    case 2:
        return is_signed ? (int64_t)((const int16_t *)base)[i]
                         : (int64_t)((const uint16_t *)base)[i];
    case 4:
        return is_signed ? (int64_t)((const int32_t *)base)[i]
                         : (int64_t)((const uint32_t *)base)[i];
    default: {
        uint64_t u = ((const uint64_t *)base)[i];
        if (is_signed) {
            return (int64_t)u;
        }
        return u > (uint64_t)INT64_MAX ? -1 : (int64_t)u;
    }
    }
}

#endif /* VOCMATCH_BUFFERS_H */
