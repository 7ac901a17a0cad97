// The harness's build parameters (compiler -D flags from sim/fast.py build_harness) and the
// names of the Verilated model's ports.
//
// DATA_TOKENS (TmuConfig.output_tokens: 1, 2, 4, 8, 16 or 32) is the width of a data beat in
// tokens: the payload is tokens[0..DATA_TOKENS) (64 bits each) then the count of valid tokens
// (bit_length(DATA_TOKENS) bits: 1..DATA_TOKENS tokens, 64..2048 bits of tokens per beat).
// UNITS (1, 2, 4, 8) is the number of units of hw.multi_system.MultiSystem (MULTI_TOP defined)
// or 1 for hw.system.System.
// Verilator spells the double underscore of Amaranth's port names (csr__addr) as ___05F.
#pragma once

#include "Vember_system.h"

#include <type_traits>
#include <utility>

#ifndef DATA_TOKENS
#define DATA_TOKENS 1
#endif
#ifndef UNITS
#define UNITS 1
#endif

// The name of unit u's port a__b (unit_port) or a (unit_wire) in the Verilated model.
#ifdef MULTI_TOP
#define UNIT_PORT(u, a, b) a##___05F##u##___05F##b
#define UNIT_WIRE(u, a) a##___05F##u
#else
#define UNIT_PORT(u, a, b) a##___05F##b
#define UNIT_WIRE(u, a) a
#endif
#define PORT_POINTER(name) std::remove_reference_t<decltype(std::declval<Vember_system&>().name)>*
