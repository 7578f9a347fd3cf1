/*
 * The one NEON switch of the firmware.
 *
 * ELT_NEON is 1 on an ARMv7-A core with Advanced SIMD (the Cortex-A9 of the Zynq-7000: gcc
 * -mfpu=neon defines __ARM_NEON) and 0 on the host, on AArch64 (the inline assembly is A32) and
 * in -DELT_SCALAR builds. The kernels never test it: a build chooses their operations by the
 * folder it puts on the include path, firmware/kernels/neon_a32 or firmware/kernels/ref
 * (codegen/target/sources.py; the TFLM pattern of reference and optimised kernels in separate
 * files behind one build switch), and the NEON folder refuses a build where ELT_NEON is 0. The
 * link layer and the generated model sources test it.
 */
#ifndef ELT_NEON_H
#define ELT_NEON_H

#include <stdint.h>

#if defined(__ARM_NEON) && !defined(__aarch64__) && !defined(ELT_SCALAR)
#define ELT_NEON 1
#else
#define ELT_NEON 0
#endif

#if ELT_NEON
#include <arm_neon.h>
#endif

#endif /* ELT_NEON_H */
