/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Include this, not deviceplugin.pb-c.h: protoc-c names the service member of the
 * Registration.Register method "register", a C keyword. We never use the generated
 * service stubs (gRPC core carries the calls), so the member is simply renamed.
 */
#pragma once

#include <protobuf-c/protobuf-c.h>

#define register register_
#include "deviceplugin.pb-c.h"
#undef register
