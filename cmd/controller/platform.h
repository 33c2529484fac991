/*
 * platform.h - the compiler and Go-style platform names of this build, for
 * the build_info metrics of the commands (agent_sandbox_build_info,
 * sandbox_router_build_info: labels `compiler` and `platform`).
 */
#ifndef AGENT_SANDBOX_PLATFORM_H
#define AGENT_SANDBOX_PLATFORM_H

#define STR_(x) #x
#define STR(x) STR_(x)
#if defined(__clang__)
#define COMPILER "clang " STR(__clang_major__) "." STR(__clang_minor__) "." STR(__clang_patchlevel__)
#elif defined(__GNUC__)
#define COMPILER "gcc " __VERSION__
#else
#define COMPILER "unknown"
#endif
#if defined(__x86_64__)
#define ARCH "amd64"
#elif defined(__aarch64__)
#define ARCH "arm64"
#elif defined(__i386__)
#define ARCH "386"
#else
#define ARCH "unknown"
#endif

#endif
