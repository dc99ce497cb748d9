// Masked softmax with a temperature: y = softmax(x / T) over the kept positions of each row, 0 elsewhere.
__global__ void masked_softmax_rows(const float* scores, const unsigned char* mask, float* probs,
                                    int rows, int cols, float temperature)
{
  int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= rows) return;
  float inv_t = 1.0f / temperature;
  float best = -1e30f;
  for (int c = 0; c < cols; c++)
    if (mask[row * cols + c]) best = fmaxf(best, scores[row * cols + c] * inv_t);
  float total = 0.0f;
  for (int c = 0; c < cols; c++)
    if (mask[row * cols + c]) total += expf(scores[row * cols + c] * inv_t - best);
  for (int c = 0; c < cols; c++)
    probs[row * cols + c] = mask[row * cols + c] ? expf(scores[row * cols + c] * inv_t - best) / total : 0.0f;
}
