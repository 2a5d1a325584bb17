/*
 * coll/strata node area of device data: which kernel of common/kernels/
 * reduces an op on an MPI datatype.  MPI's predefined types and ops are
 * named as the kernels are (strata_reduce_<op>_<type>); which pairs have a
 * kernel is the kernels' own matrix (strata_kernels_reduces).
 */
#include "coll_strata_node_device.h"

#include <stdio.h>
#include <string.h>

#include "ompi/communicator/communicator.h"
#include "ompi/constants.h"

const char *mca_coll_strata_node_device_type_name(struct ompi_datatype_t *dtype)
{
    /* clang-format off */
    static const struct {
        MPI_Datatype type;
        const char *name;
    } types[] = {
        {MPI_CHAR, "int8"},           {MPI_SIGNED_CHAR, "int8"},      {MPI_INT8_T, "int8"},
        {MPI_UNSIGNED_CHAR, "uint8"}, {MPI_UINT8_T, "uint8"},         {MPI_BYTE, "uint8"},
        {MPI_SHORT, "int16"},         {MPI_INT16_T, "int16"},         {MPI_UNSIGNED_SHORT, "uint16"},
        {MPI_UINT16_T, "uint16"},     {MPI_INT, "int32"},             {MPI_INT32_T, "int32"},
        {MPI_UNSIGNED, "uint32"},     {MPI_UINT32_T, "uint32"},       {MPI_LONG, "int64"},
        {MPI_LONG_LONG, "int64"},     {MPI_INT64_T, "int64"},         {MPI_AINT, "int64"},
        {MPI_OFFSET, "int64"},        {MPI_COUNT, "int64"},           {MPI_UNSIGNED_LONG, "uint64"},
        {MPI_UNSIGNED_LONG_LONG, "uint64"}, {MPI_UINT64_T, "uint64"}, {MPI_FLOAT, "float"},
        {MPI_DOUBLE, "double"},       {MPI_C_FLOAT_COMPLEX, "cfloat"}, {MPI_C_COMPLEX, "cfloat"},
        {MPI_C_DOUBLE_COMPLEX, "cdouble"}, {MPI_C_BOOL, "bool"},      {MPI_FLOAT_INT, "float_int"},
        {MPI_DOUBLE_INT, "double_int"}, {MPI_LONG_INT, "long_int"},   {MPI_2INT, "2int"},
        {MPI_SHORT_INT, "short_int"},
    };
    /* clang-format on */

    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); ++i) {
        if (types[i].type == dtype) {
            return types[i].name;
        }
    }
    return NULL;
}

/* The kernels' name of a predefined op: MPI's name in lower case without
 * "MPI_" (MPI_MAXLOC: "maxloc"); NULL for the ops no kernel applies. */
const char *mca_coll_strata_node_device_op_name(struct ompi_op_t *op, char *buf, size_t len)
{
    static const char *const kernel_ops[] = {"sum",  "prod", "min", "max",  "land",   "lor",
                                             "lxor", "band", "bor", "bxor", "maxloc", "minloc"};
    const char *name = mca_coll_strata_op_name(op);
    size_t i;

    if (0 != strncmp(name, "MPI_", 4) || strlen(name + 4) >= len) {
        return NULL;
    }
    for (i = 0; name[4 + i] != '\0'; ++i) {
        buf[i] = (char)(name[4 + i] - 'A' + 'a');
    }
    buf[i] = '\0';
    for (i = 0; i < sizeof(kernel_ops) / sizeof(kernel_ops[0]); ++i) {
        if (0 == strcmp(buf, kernel_ops[i])) {
            return buf;
        }
    }
    return NULL;
}

/* A kernel of the matrix (strata_kernels_reduces), on this datatype. */
bool mca_coll_strata_node_device_reduces(struct ompi_op_t *op, struct ompi_datatype_t *dtype)
{
    char obuf[16];
    const char *o = mca_coll_strata_node_device_op_name(op, obuf, sizeof(obuf));
    const char *t = mca_coll_strata_node_device_type_name(dtype);

    if (NULL == o || NULL == t || !strata_kernels_reduces(o, t) || !strata_kernels_available()) {
        return false;
    }
    /* MPI_BYTE is uint8 to the kernels, but MPI reduces it with the
     * bitwise ops only */
    return (MPI_BYTE != dtype) || ('b' == o[0]);
}
