/* fake aclnnop/aclnn_clamp.h (kope tests): documented signatures only */
#ifndef FAKE_ACLNN_CLAMP_H_
#define FAKE_ACLNN_CLAMP_H_
#include "aclnn/acl_meta.h"
#ifdef __cplusplus
extern "C" {
#endif
aclnnStatus aclnnClampGetWorkspaceSize(const aclTensor *self, const aclScalar *clipValueMin,
                                       const aclScalar *clipValueMax, aclTensor *out,
                                       uint64_t *workspaceSize, aclOpExecutor **executor);
aclnnStatus aclnnClamp(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor, aclrtStream stream);
#ifdef __cplusplus
}
#endif
#endif
