/* fake aclnnop/aclnn_relu.h (kope tests): documented signatures only */
#ifndef FAKE_ACLNN_RELU_H_
#define FAKE_ACLNN_RELU_H_
#include "aclnn/acl_meta.h"
#ifdef __cplusplus
extern "C" {
#endif
aclnnStatus aclnnReluGetWorkspaceSize(const aclTensor *self, aclTensor *out, uint64_t *workspaceSize,
                                     aclOpExecutor **executor);
aclnnStatus aclnnRelu(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor, aclrtStream stream);
#ifdef __cplusplus
}
#endif
#endif
