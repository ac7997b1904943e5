/* dtype.c - element types and host-side conversions (the same code the kernels use) */
#include "kernels/gk_scalar.h"
#include "gpool/kernels.h"

size_t gk_dtype_size(gk_dtype_t t)
{
	switch (t) {
	case GK_F32:
	case GK_I32:
		return 4;
	case GK_F16:
	case GK_BF16:
		return 2;
	case GK_F64:
		return 8;
	}
	return 0;
}

const char *gk_dtype_name(gk_dtype_t t)
{
	switch (t) {
	case GK_F32:
		return "f32";
	case GK_F16:
		return "f16";
	case GK_BF16:
		return "bf16";
	case GK_F64:
		return "f64";
	case GK_I32:
		return "i32";
	}
	return "?";
}

uint16_t gk_f32_to_f16(float f)
{
	return gk_sw_f32_to_f16(f);
}

float gk_f16_to_f32(uint16_t h)
{
	return gk_sw_f16_to_f32(h);
}

uint16_t gk_f32_to_bf16(float f)
{
	return gk_sw_f32_to_bf16(f);
}

float gk_bf16_to_f32(uint16_t h)
{
	return gk_sw_bf16_to_f32(h);
}
