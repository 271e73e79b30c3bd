// vmap's randomness='error' (kindle.func): while a guard is held, drawing from any generator
// raises, as torch.func's vmap does. A counter, so that nested vmaps compose.
#pragma once

namespace kindle {

void random_guard(int delta);

}  // namespace kindle
