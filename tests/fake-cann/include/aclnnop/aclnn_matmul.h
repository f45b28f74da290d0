/* fake aclnnop/aclnn_matmul.h (kope tests): documented signatures only */
#ifndef FAKE_ACLNN_MATMUL_H_
#define FAKE_ACLNN_MATMUL_H_
#include "aclnn/acl_meta.h"
#ifdef __cplusplus
extern "C" {
#endif
aclnnStatus aclnnMatmulGetWorkspaceSize(const aclTensor *self, const aclTensor *mat2, aclTensor *out,
                                        int8_t cubeMathType, uint64_t *workspaceSize,
                                        aclOpExecutor **executor);
aclnnStatus aclnnMatmul(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor, aclrtStream stream);
#ifdef __cplusplus
}
#endif
#endif
