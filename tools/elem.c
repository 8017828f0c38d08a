/* elem.c — one element of a buffer of any weft datatype, read and written
 * as a number, for the tools that fill buffers and check results (bench
 * --check, stress). */
#include "core/core.h"
#include "tool.h"

bool elem_is_float(weft_dtype_t dt)
{
    return dt == WEFT_FLOAT16 || dt == WEFT_BFLOAT16 || dt == WEFT_FLOAT32 || dt == WEFT_FLOAT64;
}

int64_t elem_wrap(int64_t v, weft_dtype_t dt)
{
    switch (dt) {
    case WEFT_INT8: return (int8_t)v;
    case WEFT_INT16: return (int16_t)v;
    case WEFT_INT32: return (int32_t)v;
    case WEFT_UINT8: return (uint8_t)v;
    case WEFT_UINT16: return (uint16_t)v;
    case WEFT_UINT32: return (uint32_t)v;
    default: return v;
    }
}

void elem_put_int(void *buf, size_t i, weft_dtype_t dt, int64_t v)
{
    switch (dt) {
    case WEFT_INT8: case WEFT_UINT8: ((uint8_t *)buf)[i] = (uint8_t)v; break;
    case WEFT_INT16: case WEFT_UINT16: ((uint16_t *)buf)[i] = (uint16_t)v; break;
    case WEFT_INT32: case WEFT_UINT32: ((uint32_t *)buf)[i] = (uint32_t)v; break;
    case WEFT_INT64: case WEFT_UINT64: ((uint64_t *)buf)[i] = (uint64_t)v; break;
    default: elem_put_float(buf, i, dt, (double)v); break;
    }
}

void elem_put_float(void *buf, size_t i, weft_dtype_t dt, double v)
{
    switch (dt) {
    case WEFT_FLOAT16: ((uint16_t *)buf)[i] = float_to_half((float)v); break;
    case WEFT_BFLOAT16: ((uint16_t *)buf)[i] = float_to_bf16((float)v); break;
    case WEFT_FLOAT32: ((float *)buf)[i] = (float)v; break;
    default: ((double *)buf)[i] = v; break;
    }
}

double elem_get_float(const void *buf, size_t i, weft_dtype_t dt)
{
    switch (dt) {
    case WEFT_FLOAT16: return half_to_float(((const uint16_t *)buf)[i]);
    case WEFT_BFLOAT16: return bf16_to_float(((const uint16_t *)buf)[i]);
    case WEFT_FLOAT32: return ((const float *)buf)[i];
    default: return ((const double *)buf)[i];
    }
}

int64_t elem_get_int(const void *buf, size_t i, weft_dtype_t dt)
{
    switch (dt) {
    case WEFT_INT8: case WEFT_UINT8: return elem_wrap(((const uint8_t *)buf)[i], dt);
    case WEFT_INT16: case WEFT_UINT16: return elem_wrap(((const uint16_t *)buf)[i], dt);
    case WEFT_INT32: case WEFT_UINT32: return elem_wrap(((const uint32_t *)buf)[i], dt);
    default: return (int64_t)((const uint64_t *)buf)[i];
    }
}

uint64_t elem_combine_int(weft_op_t op, weft_dtype_t dt, uint64_t acc, uint64_t v)
{
    /* wrapped values of the narrower unsigned types are non-negative, so a
     * signed comparison serves every type but uint64 */
    bool less = dt == WEFT_UINT64 ? v < acc : (int64_t)v < (int64_t)acc;
    bool more = dt == WEFT_UINT64 ? v > acc : (int64_t)v > (int64_t)acc;
    switch (op) {
    case WEFT_SUM: return acc + v;
    case WEFT_PROD: return acc * v;
    case WEFT_MIN: return less ? v : acc;
    case WEFT_MAX: return more ? v : acc;
    case WEFT_BAND: return acc & v;
    case WEFT_BOR: return acc | v;
    case WEFT_BXOR: return acc ^ v;
    case WEFT_LAND: return acc && v;
    default: return acc || v;
    }
}
