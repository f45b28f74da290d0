/* fake aclnnop/aclnn_silu.h (kope tests): documented signatures only */
#ifndef FAKE_ACLNN_SILU_H_
#define FAKE_ACLNN_SILU_H_
#include "aclnn/acl_meta.h"
#ifdef __cplusplus
extern "C" {
#endif
aclnnStatus aclnnSiluGetWorkspaceSize(const aclTensor *self, aclTensor *out, uint64_t *workspaceSize,
                                     aclOpExecutor **executor);
aclnnStatus aclnnSilu(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor, aclrtStream stream);
#ifdef __cplusplus
}
#endif
#endif
