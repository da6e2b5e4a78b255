// The built-in kernels, one factory each; KernelRegistry::with_builtins() registers them in order
// (the first that handles a call runs it).
#pragma once

#include <memory>

#include "runtime/kernels/kernel.h"

namespace cleave::runtime {

// oneDNN matmul: matmul, batch_matmul, linear and their gradients (onednn_matmul.cc).
std::unique_ptr<Kernel> make_contraction_kernel();
// oneDNN convolution: conv2d, conv2d_grad_input, conv2d_grad_weight (onednn_conv.cc); `choice`
// between its plain-layout and blocked-layout implementations of a shape.
std::unique_ptr<Kernel> make_conv_kernel(KernelChoice choice);
// oneDNN pooling: max_pool2d, avg_pool2d (onednn_pool.cc).
std::unique_ptr<Kernel> make_pool_kernel();
// oneDNN eltwise, binary, softmax and layer norm (onednn_eltwise.cc).
std::unique_ptr<Kernel> make_eltwise_kernel();
std::unique_ptr<Kernel> make_binary_kernel();
std::unique_ptr<Kernel> make_softmax_kernel();
std::unique_ptr<Kernel> make_layer_norm_kernel();
// cross_entropy and its gradient on oneDNN (log-)softmax of whole rows (onednn_loss.cc).
std::unique_ptr<Kernel> make_cross_entropy_kernel();
// Batch norm's statistics, apply and gradients as loops over (n, c) planes (batch_norm_kernel.cc).
std::unique_ptr<Kernel> make_batch_norm_kernel();
// Copies: a reshape of one contiguous range, a read shifted per dimension (slice, slice_grad,
// padding) (copy_kernels.cc).
std::unique_ptr<Kernel> make_copy_kernel();
// Plain loops: every op whose statement is element-wise
// or a top-level reduction of an element-wise body with affine indices (expression_kernel.cc).
std::unique_ptr<Kernel> make_expression_kernel();
// SGD's updates, sgd_momentum and sgd_update, as one loop (update_kernel.cc).
std::unique_ptr<Kernel> make_update_kernel();
// Plain loops per row: cross_entropy(_grad), layer_norm_grad_input/gamma (loop_kernels.cc).
std::unique_ptr<Kernel> make_row_kernel();
// embedding_grad as a scatter-add (loop_kernels.cc).
std::unique_ptr<Kernel> make_embedding_grad_kernel();
// max_pool2d_grad as a gather over each position's windows (max_pool_grad_kernel.cc).
std::unique_ptr<Kernel> make_max_pool_grad_kernel();

}  // namespace cleave::runtime
