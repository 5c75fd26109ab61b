import Image from "next/image";

/** Images on the origin, by their path under it. */
export const gallery = [
  { src: "/cat.jpg", width: 480, height: 320, alt: "A cat, 480 px wide" },
  { src: "/logo.png", width: 240, height: 80, alt: "A logo, 240 px wide" },
];

export const responsive = [
  { src: "/photos/cat gray.jpg", sizes: "100vw", share: "100%", alt: "A grey cat across the page" },
  { src: "/photos/cat-small.jpg", sizes: "50vw", share: "50%", alt: "A smaller cat on half the page" },
];

export default function Page() {
  return (
    <main>
      <h1 style={{ padding: "0 16px" }}>Origin images through pixport</h1>
      {gallery.map((image) => (
        <Image key={image.src} {...image} />
      ))}
      {responsive.map((image) => (
        <div key={image.src} style={{ position: "relative", width: image.share, aspectRatio: "3 / 2" }}>
          <Image src={image.src} alt={image.alt} fill sizes={image.sizes} style={{ objectFit: "cover" }} />
        </div>
      ))}
    </main>
  );
}
