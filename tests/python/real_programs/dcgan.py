"""DCGAN (Radford et al.) on a small synthetic image set.

The generator maps a latent vector to a 32x32 image through transposed convolutions; the
discriminator mirrors it with strided convolutions. Both use BatchNorm and the DCGAN weight
initialisation, and train with BCELoss and Adam(betas=(0.5, 0.999)).

    python dcgan.py [--init weights.pt] [--save-init weights.pt] [--niter 2]
"""
import argparse
import math
import os
import sys
import tempfile

import torch
import torch.nn as nn
import torch.nn.parallel
import torch.optim as optim
import torch.utils.data

parser = argparse.ArgumentParser()
parser.add_argument('--batchSize', type=int, default=8, help='input batch size')
parser.add_argument('--imageSize', type=int, default=32, help='the height / width of the input image to network')
parser.add_argument('--nz', type=int, default=16, help='size of the latent z vector')
parser.add_argument('--ngf', type=int, default=16)
parser.add_argument('--ndf', type=int, default=16)
parser.add_argument('--niter', type=int, default=2, help='number of epochs to train for')
parser.add_argument('--lr', type=float, default=0.0002, help='learning rate, default=0.0002')
parser.add_argument('--beta1', type=float, default=0.5, help='beta1 for adam. default=0.5')
parser.add_argument('--ngpu', type=int, default=1, help='number of GPUs to use')
parser.add_argument('--netG', default='', help="path to netG (to continue training)")
parser.add_argument('--netD', default='', help="path to netD (to continue training)")
parser.add_argument('--init', default='', help="initial weights of both nets: {'netG': sd, 'netD': sd}")
parser.add_argument('--save-init', default='', help='save the initial weights here and exit')
parser.add_argument('--outf', default='', help='folder to output model checkpoints')
parser.add_argument('--manualSeed', type=int, default=999, help='manual seed')
opt = parser.parse_args()
print(opt.__class__.__name__, "batchSize=%d imageSize=%d nz=%d niter=%d" % (opt.batchSize, opt.imageSize, opt.nz, opt.niter))

outf = opt.outf or tempfile.mkdtemp(prefix="dcgan_")
os.makedirs(outf, exist_ok=True)

print("Random Seed: ", opt.manualSeed)
torch.manual_seed(opt.manualSeed)

device = torch.device("cuda:0" if (torch.cuda.is_available() and opt.ngpu > 0) else "cpu")
ngpu = int(opt.ngpu)
nz = int(opt.nz)
ngf = int(opt.ngf)
ndf = int(opt.ndf)
nc = 3


def synthetic_images(n, size):
    """Colourful interference patterns in [-1, 1], one per index (no random numbers)."""
    coords = torch.linspace(0, 2 * math.pi, size)
    yy, xx = torch.meshgrid(coords, coords, indexing='ij')
    images = torch.empty(n, nc, size, size)
    for i in range(n):
        for c in range(nc):
            fx, fy = 1 + (i + c) % 3, 1 + (2 * i + c) % 4
            images[i, c] = torch.sin(fx * xx + 0.3 * i) * torch.cos(fy * yy - 0.5 * c)
    return images


dataset = torch.utils.data.TensorDataset(synthetic_images(32, opt.imageSize))
dataloader = torch.utils.data.DataLoader(dataset, batch_size=opt.batchSize, shuffle=False, num_workers=0)


def latent(n, step):
    """A fixed latent batch for a given step."""
    t = torch.arange(n * nz, dtype=torch.float32).view(n, nz, 1, 1)
    return torch.sin(0.7 * t + 1.3 * step) * 1.5


# custom weights initialization called on netG and netD
def weights_init(m):
    classname = m.__class__.__name__
    if classname.find('Conv') != -1:
        torch.nn.init.normal_(m.weight, 0.0, 0.02)
    elif classname.find('BatchNorm') != -1:
        torch.nn.init.normal_(m.weight, 1.0, 0.02)
        torch.nn.init.zeros_(m.bias)


class Generator(nn.Module):
    def __init__(self, ngpu):
        super(Generator, self).__init__()
        self.ngpu = ngpu
        self.main = nn.Sequential(
            # input is Z, going into a convolution
            nn.ConvTranspose2d(nz, ngf * 4, 4, 1, 0, bias=False),
            nn.BatchNorm2d(ngf * 4),
            nn.ReLU(True),
            # state size. (ngf*4) x 4 x 4
            nn.ConvTranspose2d(ngf * 4, ngf * 2, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ngf * 2),
            nn.ReLU(True),
            # state size. (ngf*2) x 8 x 8
            nn.ConvTranspose2d(ngf * 2, ngf, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ngf),
            nn.ReLU(True),
            # state size. (ngf) x 16 x 16
            nn.ConvTranspose2d(ngf, nc, 4, 2, 1, bias=False),
            nn.Tanh()
            # state size. (nc) x 32 x 32
        )

    def forward(self, input):
        if input.is_cuda and self.ngpu > 1:
            output = nn.parallel.data_parallel(self.main, input, range(self.ngpu))
        else:
            output = self.main(input)
        return output


class Discriminator(nn.Module):
    def __init__(self, ngpu):
        super(Discriminator, self).__init__()
        self.ngpu = ngpu
        self.main = nn.Sequential(
            # input is (nc) x 32 x 32
            nn.Conv2d(nc, ndf, 4, 2, 1, bias=False),
            nn.LeakyReLU(0.2, inplace=True),
            # state size. (ndf) x 16 x 16
            nn.Conv2d(ndf, ndf * 2, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ndf * 2),
            nn.LeakyReLU(0.2, inplace=True),
            # state size. (ndf*2) x 8 x 8
            nn.Conv2d(ndf * 2, ndf * 4, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ndf * 4),
            nn.LeakyReLU(0.2, inplace=True),
            # state size. (ndf*4) x 4 x 4
            nn.Conv2d(ndf * 4, 1, 4, 1, 0, bias=False),
            nn.Sigmoid()
        )

    def forward(self, input):
        if input.is_cuda and self.ngpu > 1:
            output = nn.parallel.data_parallel(self.main, input, range(self.ngpu))
        else:
            output = self.main(input)

        return output.view(-1, 1).squeeze(1)


netG = Generator(ngpu).to(device)
netG.apply(weights_init)
netD = Discriminator(ngpu).to(device)
netD.apply(weights_init)

if opt.save_init:
    torch.save({'netG': netG.state_dict(), 'netD': netD.state_dict()}, opt.save_init)
    print("saved initial weights to", opt.save_init)
    sys.exit(0)
if opt.init:
    weights = torch.load(opt.init, map_location=device)
    netG.load_state_dict(weights['netG'])
    netD.load_state_dict(weights['netD'])
if opt.netG != '':
    netG.load_state_dict(torch.load(opt.netG))
if opt.netD != '':
    netD.load_state_dict(torch.load(opt.netD))
if (device.type == 'cuda') and (ngpu > 1):
    netG = nn.DataParallel(netG, list(range(ngpu)))
    netD = nn.DataParallel(netD, list(range(ngpu)))
print(netG)
print(netD)

criterion = nn.BCELoss()

fixed_noise = latent(opt.batchSize, -1).to(device)
real_label = 1.
fake_label = 0.

# setup optimizer
optimizerD = optim.Adam(netD.parameters(), lr=opt.lr, betas=(opt.beta1, 0.999))
optimizerG = optim.Adam(netG.parameters(), lr=opt.lr, betas=(opt.beta1, 0.999))

G_losses = []
D_losses = []
iters = 0
for epoch in range(opt.niter):
    for i, data in enumerate(dataloader, 0):
        ############################
        # (1) Update D network: maximize log(D(x)) + log(1 - D(G(z)))
        ###########################
        # train with real
        netD.zero_grad()
        real_cpu = data[0].to(device)
        batch_size = real_cpu.size(0)
        label = torch.full((batch_size,), real_label, dtype=real_cpu.dtype, device=device)

        output = netD(real_cpu)
        errD_real = criterion(output, label)
        errD_real.backward()
        D_x = output.mean().item()

        # train with fake
        noise = latent(batch_size, iters).to(device)
        fake = netG(noise)
        label.fill_(fake_label)
        output = netD(fake.detach())
        errD_fake = criterion(output, label)
        errD_fake.backward()
        D_G_z1 = output.mean().item()
        errD = errD_real + errD_fake
        optimizerD.step()

        ############################
        # (2) Update G network: maximize log(D(G(z)))
        ###########################
        netG.zero_grad()
        label.fill_(real_label)  # fake labels are real for generator cost
        output = netD(fake)
        errG = criterion(output, label)
        errG.backward()
        D_G_z2 = output.mean().item()
        optimizerG.step()

        print('[%d/%d][%d/%d] Loss_D: %.6f Loss_G: %.6f D(x): %.6f D(G(z)): %.6f / %.6f'
              % (epoch, opt.niter, i, len(dataloader),
                 errD.item(), errG.item(), D_x, D_G_z1, D_G_z2))
        G_losses.append(errG.item())
        D_losses.append(errD.item())
        iters += 1

    with torch.no_grad():
        fake = netG(fixed_noise).detach().cpu()
    print('epoch %d: fixed-noise samples %s, mean %.6f, std %.6f, min %.6f, max %.6f'
          % (epoch, list(fake.shape), fake.mean().item(), fake.std().item(), fake.min().item(), fake.max().item()))

    # do checkpointing
    torch.save(netG.state_dict(), '%s/netG_epoch_%d.pth' % (outf, epoch))
    torch.save(netD.state_dict(), '%s/netD_epoch_%d.pth' % (outf, epoch))

# continue from the last checkpoint, as a second run with --netG/--netD would
netG2 = Generator(ngpu).to(device)
netG2.load_state_dict(torch.load('%s/netG_epoch_%d.pth' % (outf, opt.niter - 1)))
netG.eval()
netG2.eval()
with torch.no_grad():
    same = torch.equal(netG(fixed_noise), netG2(fixed_noise))
print('reloaded generator matches: %s' % same)
print('mean losses: D %.6f, G %.6f' % (sum(D_losses) / len(D_losses), sum(G_losses) / len(G_losses)))
