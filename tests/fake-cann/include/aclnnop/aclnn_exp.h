/* fake aclnnop/aclnn_exp.h (kope tests): documented signatures only */
#ifndef FAKE_ACLNN_EXP_H_
#define FAKE_ACLNN_EXP_H_
#include "aclnn/acl_meta.h"
#ifdef __cplusplus
extern "C" {
#endif
aclnnStatus aclnnExpGetWorkspaceSize(const aclTensor *self, aclTensor *out, uint64_t *workspaceSize,
                                     aclOpExecutor **executor);
aclnnStatus aclnnExp(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor, aclrtStream stream);
#ifdef __cplusplus
}
#endif
#endif
