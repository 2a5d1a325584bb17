/*
 * accelerator/cuda (Strata): Open MPI 5.0's accelerator framework on Strata's
 * CUDA driver table.
 *
 * Open MPI 5.0 asks one component of its opal "accelerator" framework about
 * device memory: the datatype engine (which copies through it), pml/ob1
 * (streams and events for pipelined copies), the memory registration cache,
 * and MPIX_Query_cuda_support(), which answers 1 exactly when the selected
 * component is named "cuda".  Distribution builds have only "null", which
 * calls every pointer host memory.  This component is named "cuda" for that
 * answer, opens the driver at run time through common/ (no link to
 * libcuda), and is selected only when switched on (accelerator_cuda_strata_enable,
 * set by cuda-aware.conf) on a node whose driver has a device.  Where Open
 * MPI was built with CUDA itself it steps aside: that Open MPI has its own.
 *
 * Files: _component.c (selection, parameters), _context.c (the output
 * stream, error lines, a device's context made current: what the entry
 * points share), _memory.c (pointer kinds, copies, allocation,
 * registration), _stream.c (streams, events), _device.c (device ids, PCI
 * attributes, peer access).
 */
#ifndef ACCELERATOR_STRATA_H
#define ACCELERATOR_STRATA_H

#include "opal_config.h"

#include "opal/mca/accelerator/accelerator.h"

#include "common/strata_cuda.h"

BEGIN_C_DECLS

/* The component: its name is "cuda" (see above), its symbol what Open MPI's
 * loader derives from the file name mca_accelerator_cuda.so. */
OPAL_DECLSPEC extern opal_accelerator_base_component_t mca_accelerator_cuda_component;

/* Exported: the mark of this component's file (accelerator_strata_component.c). */
OPAL_DECLSPEC extern const char mca_accelerator_cuda_strata_marker[];

/* The operations table handed to the framework. */
extern opal_accelerator_base_module_t accelerator_strata_module;

/* What the entry points share (accelerator_strata_context.c). */

/* Output stream, opened by the component with its verbosity
 * (accelerator_cuda_strata_verbose). */
extern int accelerator_strata_output;

/* An error line naming the call, the driver's result and what it was for. */
void accelerator_strata_report(const char *call, CUresult res, const char *what, ...)
    __attribute__((format(printf, 3, 4)));

/* Makes device `dev_id`'s primary context current (any context where
 * dev_id is MCA_ACCELERATOR_NO_DEVICE_ID and one is current), remembering
 * the caller's in *saved for accelerator_strata_ctx_pop().  OPAL_SUCCESS
 * or OPAL_ERROR with a line said. */
int accelerator_strata_ctx_push(int dev_id, CUcontext *saved, const char *what);
void accelerator_strata_ctx_pop(CUcontext saved);

/* Entry points, one file per group. */
int accelerator_strata_check_addr(const void *addr, int *dev_id, uint64_t *flags);
int accelerator_strata_mem_copy_async(int dest_dev_id, int src_dev_id, void *dest, const void *src,
                                      size_t size, opal_accelerator_stream_t *stream,
                                      opal_accelerator_transfer_type_t type);
int accelerator_strata_mem_copy(int dest_dev_id, int src_dev_id, void *dest, const void *src,
                                size_t size, opal_accelerator_transfer_type_t type);
int accelerator_strata_mem_move(int dest_dev_id, int src_dev_id, void *dest, const void *src,
                                size_t size, opal_accelerator_transfer_type_t type);
int accelerator_strata_mem_alloc(int dev_id, void **ptr, size_t size);
int accelerator_strata_mem_release(int dev_id, void *ptr);
int accelerator_strata_get_address_range(int dev_id, const void *ptr, void **base, size_t *size);
int accelerator_strata_host_register(int dev_id, void *ptr, size_t size);
int accelerator_strata_host_unregister(int dev_id, void *ptr);
int accelerator_strata_get_buffer_id(int dev_id, const void *addr,
                                     opal_accelerator_buffer_id_t *buf_id);

int accelerator_strata_create_stream(int dev_id, opal_accelerator_stream_t **stream);
int accelerator_strata_create_event(int dev_id, opal_accelerator_event_t **event);
int accelerator_strata_record_event(int dev_id, opal_accelerator_event_t *event,
                                    opal_accelerator_stream_t *stream);
int accelerator_strata_query_event(int dev_id, opal_accelerator_event_t *event);

int accelerator_strata_get_device(int *dev_id);
int accelerator_strata_get_device_pci_attr(int dev_id, opal_accelerator_pci_attr_t *pci_attr);
int accelerator_strata_device_can_access_peer(int *access, int dev1, int dev2);

/* The copies' own stream, per device (made on first use). */
CUstream accelerator_strata_copy_stream(int dev_id);
void accelerator_strata_streams_fini(void);

END_C_DECLS

#endif /* ACCELERATOR_STRATA_H */
