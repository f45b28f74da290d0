/*
 * fake aclnn/acl_meta.h (kope tests): the aclnn tensor/scalar API subset
 * kope's host program uses for the vendor-operator baseline, with the
 * documented names and signatures. Not Huawei's header.
 */
#ifndef FAKE_ACLNN_ACL_META_H_
#define FAKE_ACLNN_ACL_META_H_

#include <stdint.h>

#include "acl/acl.h"

/* tests: a toolkit whose aclnn headers differ from the documented ones */
#ifdef FAKE_ACLNN_HEADERS_DIFFER
#error "fake toolkit: these aclnn headers do not match what kope was written against"
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef int32_t aclnnStatus;
typedef struct aclTensor aclTensor;
typedef struct aclScalar aclScalar;
typedef struct aclOpExecutor aclOpExecutor;

typedef enum { ACL_DT_UNDEFINED = -1, ACL_FLOAT = 0, ACL_FLOAT16 = 1, ACL_INT32 = 3, ACL_INT64 = 9 } aclDataType;
typedef enum { ACL_FORMAT_UNDEFINED = -1, ACL_FORMAT_NCHW = 0, ACL_FORMAT_ND = 2 } aclFormat;

aclTensor *aclCreateTensor(const int64_t *viewDims, uint64_t viewDimsNum, aclDataType dataType,
                           const int64_t *stride, int64_t offset, aclFormat format,
                           const int64_t *storageDims, uint64_t storageDimsNum, void *tensorData);
aclScalar *aclCreateScalar(void *value, aclDataType dataType);
aclnnStatus aclDestroyTensor(const aclTensor *tensor);
aclnnStatus aclDestroyScalar(const aclScalar *scalar);

#ifdef __cplusplus
}
#endif
#endif
