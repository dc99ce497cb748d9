// Histogram of floats into nbins equal-width bins starting at lo; scale = nbins / (hi - lo).
__global__ void histogram_float(const float *data, int *bins, int n, int nbins, float lo, float scale)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        int b = (int)((data[i] - lo) * scale);
        b = max(0, min(b, nbins - 1));
        atomicAdd(&bins[b], 1);
    }
}
