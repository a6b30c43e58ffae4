// A second peer for the float32 linear cases: OpenBLAS (cblas_sgemm for prefill, cblas_sgemv for
// decode), the BLAS that NumPy's wheels ship, called in this process through koffi
// (one of the bench's optional peers, peers.mjs: a C function interface for Node with prebuilt
// binaries). Its calls are
// synchronous (they block the JS thread, which nothing else needs while the bench times them).
// The library is the system's libopenblas (Debian: libopenblas0-pthread), or the file named by
// METAL_TENSOROPS_BENCH_OPENBLAS; if neither loads, the cases run without this peer.
import { loadPeerModule } from './peers.mjs';

const ROW_MAJOR = 101, NO_TRANS = 111, TRANS = 112;

/**
 * OpenBLAS picks its kernels by the CPU it recognises: releases older than the CPU (Debian 12's
 * 0.3.21 on Zen 5) fall back to its AVX2 "Haswell" kernels. On an AVX-512 CPU the bench asks for
 * its AVX-512 kernels (OPENBLAS_CORETYPE=SkylakeX, read when the library loads), so that the peer
 * runs at its best; a coretype set by the caller is kept.
 */
function chooseCoretype(avx512) {
  if (!process.env.OPENBLAS_CORETYPE && avx512) process.env.OPENBLAS_CORETYPE = 'SkylakeX';
  return process.env.OPENBLAS_CORETYPE ?? null;
}

/** { blas } or { missing: reason }. */
export function loadOpenBlas(threads, { avx512 = false } = {}) {
  if (process.env.METAL_TENSOROPS_BENCH_NO_PEER) return { missing: 'disabled by METAL_TENSOROPS_BENCH_NO_PEER' };
  const loaded = loadPeerModule('koffi');
  if (loaded.missing) return { missing: loaded.missing, notInstalled: loaded.notInstalled };
  const koffi = loaded.module;
  const names = process.env.METAL_TENSOROPS_BENCH_OPENBLAS
    ? [process.env.METAL_TENSOROPS_BENCH_OPENBLAS]
    : ['libopenblas.so.0', 'libopenblas.so', 'libopenblas.dylib', 'libopenblas.dll'];
  const coretypeAsked = chooseCoretype(avx512);
  const errors = [];
  for (const name of names) {
    let lib;
    try {
      lib = koffi.load(name);
    } catch (err) {
      errors.push(`${name}: ${String(err?.message ?? err).split('\n')[0]}`);
      continue;
    }
    return { blas: new OpenBlas(koffi, lib, threads, coretypeAsked) };
  }
  return { missing: `OpenBLAS not found (${errors.join('; ')}); Debian: apt-get install libopenblas0-pthread` };
}

export class OpenBlas {
  constructor(koffi, lib, threads, coretypeAsked) {
    this.sgemm = lib.func('void cblas_sgemm(int, int, int, int, int, int, float, const float*, int, const float*, int, float, _Inout_ float*, int)');
    this.sgemv = lib.func('void cblas_sgemv(int, int, int, int, float, const float*, int, const float*, int, float, _Inout_ float*, int)');
    lib.func('void openblas_set_num_threads(int)')(threads);
    this.threads = lib.func('int openblas_get_num_threads()')();
    this.config = lib.func('const char* openblas_get_config()')();
    this.core = lib.func('const char* openblas_get_corename()')();
    this.coretypeAsked = coretypeAsked;
    this.version = /OpenBLAS (\S+)/.exec(this.config)?.[1] ?? 'unknown';
  }

  describe() {
    return {
      name: 'OpenBLAS', version: this.version, available: true, threads: this.threads, core: this.core,
      config: this.config, ...(this.coretypeAsked ? { coretype: this.coretypeAsked } : {}),
    };
  }

  /** The op the float32 linear case of M rows runs: y = x W^T with W [N, K] row-major as given. */
  op(M) {
    return M === 1
      ? 'cblas_sgemv (W [N, K] row-major, no transpose)'
      : 'cblas_sgemm (x [M, K] times W^T, W [N, K] row-major, transposed by the call)';
  }

  /** y[M, N] = x[M, K] W[N, K]^T into y (Float32Arrays). */
  linear(x, w, y, M, N, K) {
    if (M === 1) this.sgemv(ROW_MAJOR, NO_TRANS, N, K, 1, w, K, x, 1, 0, y, 1);
    else this.sgemm(ROW_MAJOR, NO_TRANS, TRANS, M, N, K, 1, x, K, w, K, 0, y, N);
    return y;
  }
}
