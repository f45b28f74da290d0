/* cross/deps-probe.c - smallest program that links all five dependencies and
 * checks each one computes something right. cross/deps.sh builds it statically
 * for every ARCH and runs it (under qemu when cross-built). Prints ALL OK. */
#include <stdio.h>
#include <string.h>
#include <math.h>
#include <sqlite3.h>
#include <cJSON.h>
#include <mbedtls/sha256.h>
#include <mbedtls/version.h>
#include <curl/curl.h>
#include <cblas.h>
#ifndef NO_SQLITE
static int t_sqlite(void) {
  sqlite3 *db; char *err = NULL; sqlite3_stmt *st; int v = -1;
  if (sqlite3_open(":memory:", &db) != SQLITE_OK) return 1;
  sqlite3_exec(db, "create table t(x); insert into t values(40),(2);", 0, 0, &err);
  sqlite3_prepare_v2(db, "select sum(x) from t", -1, &st, 0);
  if (sqlite3_step(st) == SQLITE_ROW) v = sqlite3_column_int(st, 0);
  sqlite3_finalize(st); sqlite3_close(db);
  printf("sqlite %s sum=%d\n", sqlite3_libversion(), v);
  return v != 42;
}
#endif
#ifndef NO_CJSON
static int t_cjson(void) {
  cJSON *j = cJSON_Parse("{\"name\":\"kope\",\"n\":[1,2,3]}");
  if (!j) return 1;
  int n = cJSON_GetArraySize(cJSON_GetObjectItem(j, "n"));
  printf("cJSON %s name=%s n=%d\n", cJSON_Version(), cJSON_GetObjectItem(j, "name")->valuestring, n);
  cJSON_Delete(j); return n != 3;
}
#endif
#ifndef NO_MBEDTLS
static int t_sha(void) {
  unsigned char h[32];
  mbedtls_sha256((const unsigned char *)"abc", 3, h, 0); /* 3.x: returns int; 2.28: mbedtls_sha256_ret */
  printf("mbedtls %s sha256(abc)=", MBEDTLS_VERSION_STRING);
  for (int i = 0; i < 4; i++) printf("%02x", h[i]);
  printf("...\n");
  return !(h[0] == 0xba && h[1] == 0x78 && h[2] == 0x16 && h[3] == 0xbf);
}
#endif
#ifndef NO_CURL
static int t_curl(void) {
  curl_global_init(CURL_GLOBAL_DEFAULT);
  curl_version_info_data *d = curl_version_info(CURLVERSION_NOW);
  printf("curl %s ssl=%s\n", d->version, d->ssl_version ? d->ssl_version : "(none)");
  curl_global_cleanup();
  return d->ssl_version == NULL;
}
#endif
#ifndef NO_BLAS
static int t_blas(void) {
  enum { N = 64 }; static float A[N*N], B[N*N], C[N*N];
  for (int i = 0; i < N*N; i++) { A[i] = (i % 7) - 3; B[i] = (i % 5) - 2; }
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, N, N, 1.0f, A, N, B, N, 0.0f, C, N);
  double maxerr = 0;
  for (int i = 0; i < N; i++) for (int j = 0; j < N; j++) {
    float s = 0; for (int k = 0; k < N; k++) s += A[i*N+k] * B[k*N+j];
    if (fabs(s - C[i*N+j]) > maxerr) maxerr = fabs(s - C[i*N+j]);
  }
  printf("openblas %s sgemm 64x64 maxerr=%g\n", openblas_get_config(), maxerr);
  return maxerr > 1e-3;
}
#endif
int main(void) {
  int rc = 0;
#ifndef NO_SQLITE
  rc |= t_sqlite();
#endif
#ifndef NO_CJSON
  rc |= t_cjson();
#endif
#ifndef NO_MBEDTLS
  rc |= t_sha();
#endif
#ifndef NO_CURL
  rc |= t_curl();
#endif
#ifndef NO_BLAS
  rc |= t_blas();
#endif
  printf("%s\n", rc ? "FAIL" : "ALL OK");
  return rc;
}
