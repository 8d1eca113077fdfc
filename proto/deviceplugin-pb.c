/* SPDX-License-Identifier: Apache-2.0 */
/* Compiles the protoc-c output with the rename explained in deviceplugin.h. */
#include "deviceplugin.h"

#define register register_
#include "deviceplugin.pb-c.c"
#undef register
