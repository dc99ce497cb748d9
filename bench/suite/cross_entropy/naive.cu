// Naive cross-entropy loss per row of logits (rows x classes) against integer targets:
// loss[row] = log(sum(exp(logits[row]))) - logits[row][target[row]], with the row maximum subtracted for
// stability. One thread per row, three passes over the row (the threads of a warp read addresses a whole row
// apart).

__global__ void cross_entropy_naive(const float* logits, const long long* targets, float* loss, int rows,
                                    int classes) {
  int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= rows) return;
  const float* l = logits + row * classes;
  float m = l[0];
  for (int c = 1; c < classes; ++c) m = fmaxf(m, l[c]);
  float s = 0.0f;
  for (int c = 0; c < classes; ++c) s += expf(l[c] - m);
  loss[row] = logf(s) + m - l[targets[row]];
}
