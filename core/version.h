/* core/version.h - kope's version (semantic; bumped with the store schema or the wire format). */
#ifndef KOPE_VERSION_H
#define KOPE_VERSION_H
#define KOPE_VERSION "0.1.0"
#endif
