// A stand-in for the NVIDIA driver's library, for test_device: a driver that
// supports CUDA up to 12.2 (cuDriverGetVersion's only job here).
extern "C" __attribute__((visibility("default"))) int cuDriverGetVersion(int* version) {
  *version = 12020;
  return 0;  // CUDA_SUCCESS
}
