// metalport host-check shim: <objc/runtime.h> (the few runtime calls host code may name).
#pragma once
#include <objc/objc.h>
extern "C" {
Class objc_getClass(const char* name);
const char* class_getName(Class cls);
BOOL class_respondsToSelector(Class cls, SEL sel);
}
