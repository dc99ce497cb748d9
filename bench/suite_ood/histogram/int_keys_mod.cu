// Histogram of integer keys into NBINS bins by remainder.
#define NBINS 1024

__global__ void histo_mod(const int *keys, unsigned int *hist, int n)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        atomicAdd(&hist[keys[i] % NBINS], 1u);
}
